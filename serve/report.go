package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"io"

	"github.com/stateutil/stateutil/snapshot/report"
)

// Report is what an inspect --html report shows: the views of one
// snapshot that the server's overview, heat map and operator-state pages
// show, as the API answers them.
type Report struct {
	Summary        *report.Summary
	KeyGroups      *report.KeyGroups
	OperatorStates *report.OperatorStates
}

var reportPage = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.Policy}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stateutil report: {{.Location}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<div id="app"></div>
<script type="application/json" id="report-data">{{.Data}}</script>
<script>{{.JS}}</script>
</body>
</html>
`))

// WriteReport writes one self-contained HTML page: the UI's script and
// styles inline, the views as data, and a policy that lets the page load
// nothing from anywhere.
func WriteReport(w io.Writer, rep Report) error {
	js, css := asset("app.js"), asset("app.css")
	if bytes.Contains(bytes.ToLower(js), []byte("</script")) {
		return errors.New("serve: the UI bundle cannot be inlined: it holds </script")
	}
	loc := rep.Summary.Location
	data, err := json.Marshal(map[string]any{"api": map[string]any{
		"/api/snapshots":                  []SnapshotRef{{ID: 0, Location: loc, Format: rep.Summary.Format}},
		"/api/snapshots/0":                rep.Summary,
		"/api/snapshots/0/key-groups":     rep.KeyGroups,
		"/api/snapshots/0/operator-state": rep.OperatorStates,
	}})
	if err != nil {
		return err
	}
	policy := "default-src 'none'; script-src " + hashSource(js) + "; style-src " + hashSource(css) + " " + jsonTreeStyle +
		"; img-src data:; base-uri 'none'; form-action 'none'"
	return reportPage.Execute(w, map[string]any{
		"Policy": policy, "Location": loc,
		// Trusted: the embedded bundle, checked above; json.Marshal
		// escapes <, > and & in the data.
		"CSS": template.CSS(css), "JS": template.JS(js), "Data": template.JS(data),
	})
}
