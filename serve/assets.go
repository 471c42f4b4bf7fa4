package serve

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
)

// The UI, bundled from ui/ by scripts/build-ui.sh and committed, so that
// building stateutil needs no npm.
//
//go:embed assets
var assets embed.FS

func asset(name string) []byte {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic("serve: embedded asset missing: " + name)
	}
	return b
}

// hashSource is a CSP source that allows exactly the inline script or
// style whose text is b.
func hashSource(b []byte) string {
	sum := sha256.Sum256(b)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// jsonTreeStyle is the style element the JSON-tree library adds to the
// page, the only inline style the policy allows.
var jsonTreeStyle = hashSource(asset("json-formatter.css"))

// contentSecurityPolicy lets a page run and style only what the server
// sends from its own assets, and reach nothing but the server itself.
var contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' " + jsonTreeStyle +
	"; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/assets/", http.FileServerFS(sub))
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(asset("index.html"))
}
