package gateway

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// dist is the built web UI; scripts/build-web.sh rebuilds it from
// web/package-lock.json and the result is committed, so `go build` needs no npm.
//
//go:embed all:web/dist
var dist embed.FS

// webHandler serves the UI: index.html at /, hashed assets under /assets/
// with long caching, and a JSON 404 for anything else.
func webHandler() (http.Handler, error) {
	root, err := fs.Sub(dist, "web/dist")
	if err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.URL.Path == "/" {
				writeMethodNotAllowed(w, r, http.MethodGet)
				return
			}
			writeNotFound(w, r)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		st, err := fs.Stat(root, name)
		if err != nil || st.IsDir() {
			writeNotFound(w, r)
			return
		}
		if strings.HasPrefix(name, "assets/") {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if name == "index.html" {
			http.ServeFileFS(w, r, root, name)
			return
		}
		files.ServeHTTP(w, r)
	}), nil
}
