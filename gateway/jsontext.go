package gateway

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// textError finds the first JSON string in body that is not text: raw bytes
// that are not UTF-8, or a \u escape of a UTF-16 surrogate half without its
// other half. Protojson refuses both in words that name neither ("unexpected
// EOF", "invalid escape code"); this says which field, what and where. It
// checks strings only: anything else that is wrong is the decoder's to name.
func textError(body []byte) error {
	inString := false
	start := 0
	key := ""
	field := func() string {
		if key == "" {
			return "a string"
		}
		return strconv.Quote(key)
	}
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case !inString:
			if c == '"' {
				inString, start = true, i+1
			}
			i++
		case c == '"':
			inString = false
			if isKey(body, i+1) {
				key = string(body[start:i])
			}
			i++
		case c == '\\' && i+1 < len(body) && body[i+1] == 'u':
			r, ok := escapedUnit(body, i)
			if !ok || !utf16.IsSurrogate(r) {
				i += 2
				continue
			}
			if r < 0xDC00 {
				if low, ok := escapedUnit(body, i+6); ok && low >= 0xDC00 && low <= 0xDFFF {
					i += 12
					continue
				}
			}
			return fmt.Errorf("request body: %s holds a lone surrogate %s at byte offset %d (half of a UTF-16 pair without its other half), which is not text; send the character itself or both halves of its pair",
				field(), body[i:i+6], i)
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("request body: %s is not valid UTF-8 at byte offset %d (byte 0x%02x begins no character); send text in UTF-8", field(), i, c)
			}
			i += size
		}
	}
	return nil
}

// escapedUnit reads the \uXXXX escape at body[i:], if there is one.
func escapedUnit(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

// isKey says whether the string that ended before body[i:] is an object key:
// a colon follows it.
func isKey(body []byte, i int) bool {
	for ; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}
