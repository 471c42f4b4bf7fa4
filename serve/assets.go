package serve

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strconv"
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

// assetTypes are the embedded assets' content types, by name.
var assetTypes = map[string]string{
	"app.js":             "text/javascript; charset=utf-8",
	"app.css":            "text/css; charset=utf-8",
	"json-formatter.css": "text/css; charset=utf-8",
	"sql.js":             "text/javascript; charset=utf-8",
	"sql.css":            "text/css; charset=utf-8",
}

// serveAsset answers with an embedded asset; any other name is the API's
// 404.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	typ, ok := assetTypes[name]
	if !ok {
		writeError(w, http.StatusNotFound, "no such asset: "+name)
		return
	}
	b := asset(name)
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(asset("index.html"))
}
