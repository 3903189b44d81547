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

// contentSecurityPolicy holds the UI to its own files: scripts and styles
// from the gateway only (no inline code, so an injected tag runs nothing),
// images from the gateway or inline (rendered views arrive as data: URLs,
// downloads as blob: URLs), requests to the gateway and to a host runtime on
// this machine (the courier path fetches the loopback runtime, whose port
// the person chooses), and no page of any origin may frame it, so no other
// site can lay its buttons under a person's click.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self' http://127.0.0.1:* http://localhost:*; manifest-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// setPageHeaders sets what every file of the UI is served with: the policy
// above, the same refusal to be framed for browsers older than
// frame-ancestors, no sniffing, and no referrer (the address carries the
// session id).
func setPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

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
		setPageHeaders(w.Header())
		if name == "index.html" {
			http.ServeFileFS(w, r, root, name)
			return
		}
		files.ServeHTTP(w, r)
	}), nil
}
