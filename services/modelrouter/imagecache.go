package modelrouter

import (
	"container/list"
	"crypto/sha256"
	"sync"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// imageCache remembers scaled images: every turn resends the whole
// transcript, and scaling a large render takes on the order of a second, so
// each image should be scaled once per vision limit, not once per turn.
type imageCache struct {
	mu    sync.Mutex
	max   int // bytes of scaled images kept
	size  int
	items map[imageKey]*list.Element
	order *list.List // most recently used first
}

type imageKey struct {
	sum   [sha256.Size]byte
	limit visionLimit
}

type imageEntry struct {
	key imageKey
	img *modelv1.ImageBlock
}

func newImageCache(max int) *imageCache {
	return &imageCache{max: max, items: map[imageKey]*list.Element{}, order: list.New()}
}

// scale returns img scaled to the limit, from the cache when it was seen before.
func (c *imageCache) scale(img *modelv1.ImageBlock, limit visionLimit) (*modelv1.ImageBlock, error) {
	key := imageKey{sum: sha256.Sum256(append([]byte(img.GetMimeType()+"\x00"), img.GetData()...)), limit: limit}
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*imageEntry).img, nil
	}
	c.mu.Unlock()
	out, err := scaleImage(img, limit)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok {
		c.items[key] = c.order.PushFront(&imageEntry{key: key, img: out})
		c.size += len(out.GetData())
		for c.size > c.max && c.order.Len() > 1 {
			last := c.order.Back()
			e := last.Value.(*imageEntry)
			c.order.Remove(last)
			delete(c.items, e.key)
			c.size -= len(e.img.GetData())
		}
	}
	return out, nil
}
