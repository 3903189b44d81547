package cli

import (
	"strconv"
	"unicode/utf8"
)

// PartialString returns as much of the top-level string field key as the
// partial JSON object raw already holds, decoded, and whether the string is
// complete. The model writes tool arguments a few characters at a time; this
// lets the script appear as it is typed.
func PartialString(raw, key string) (string, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return "", false
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return "", false
		}
		name, next, done := decodeString(raw, i+1)
		if !done {
			return "", false
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return "", false
		}
		i = skipSpace(raw, i+1)
		if i >= len(raw) {
			return "", false
		}
		if name == key {
			if raw[i] != '"' {
				return "", false
			}
			v, _, done := decodeString(raw, i+1)
			return v, done
		}
		i = skipValue(raw, i)
		if i < 0 {
			return "", false
		}
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != ',' {
			return "", false
		}
		i++
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// decodeString decodes the JSON string body starting at i (after the opening
// quote) up to the last complete character, returning the text, the index
// after the closing quote, and whether the string closed.
func decodeString(s string, i int) (string, int, bool) {
	var out []byte
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return string(out), i + 1, true
		case c == '\\':
			if i+1 >= len(s) {
				return string(out), i, false
			}
			switch e := s[i+1]; e {
			case 'n':
				out = append(out, '\n')
			case 't':
				out = append(out, '\t')
			case 'r':
				out = append(out, '\r')
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'u':
				if i+6 > len(s) {
					return string(out), i, false
				}
				n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err != nil {
					return string(out), i, false
				}
				r := rune(n)
				width := 6
				// A surrogate pair arrives as two escapes; wait for both halves.
				if r >= 0xD800 && r < 0xDC00 {
					if i+12 > len(s) {
						return string(out), i, false
					}
					lo, err := strconv.ParseUint(s[i+8:i+12], 16, 32)
					if err != nil || s[i+6] != '\\' || s[i+7] != 'u' {
						r = utf8.RuneError
					} else {
						r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
						width = 12
					}
				}
				out = utf8.AppendRune(out, r)
				i += width
				continue
			default:
				out = append(out, e)
			}
			i += 2
		default:
			out = append(out, c)
			i++
		}
	}
	return string(out), i, false
}

// skipValue returns the index after the JSON value at i, or -1 when the
// value is not complete yet.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		_, next, done := decodeString(s, i+1)
		if !done {
			return -1
		}
		return next
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				_, next, done := decodeString(s, i+1)
				if !done {
					return -1
				}
				i = next
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		for i < len(s) && s[i] != ',' && s[i] != '}' {
			i++
		}
		if i >= len(s) {
			return -1
		}
		return i
	}
}
