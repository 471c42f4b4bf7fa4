package cmd

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The SQL page's API answers a query as stateutil sql -o json does (as
// arrays of the columns' values), with at most limit rows, over two
// snapshots as catalogs s0 and s1; what stateutil sql refuses it refuses
// as a bad request; the page itself is served.
func TestServeSQL(t *testing.T) {
	hs := startServer(t, "", example, "../testdata/memory/maxp4096.dump")
	q := `SELECT key, value FROM s0."word-counter"."count" ORDER BY key LIMIT 4`
	code, body := apiGet(t, hs, "/api/sql?q="+url.QueryEscape(q))
	if code != http.StatusOK {
		t.Fatalf("GET /api/sql: %d %s", code, body)
	}
	got := parseJSON(t, "/api/sql", body).(map[string]any)
	var want []any
	for _, row := range commandJSON(t, ExitOK, "sql", example, "-e", strings.ReplaceAll(q, "s0.", ""), "-o", "json").([]any) {
		r := row.(map[string]any)
		want = append(want, []any{r["key"], r["value"]})
	}
	sameJSON(t, "/api/sql rows", got["rows"], want)
	if got["truncated"] != false || len(got["columns"].([]any)) != 2 {
		t.Errorf("answer %s", body)
	}

	code, body = apiGet(t, hs, "/api/sql?limit=3&q="+url.QueryEscape(`SELECT * FROM s1."word-counter"."recent"`))
	if got := parseJSON(t, "/api/sql limit", body).(map[string]any); code != http.StatusOK || len(got["rows"].([]any)) != 3 || got["truncated"] != true {
		t.Errorf("limit=3: %d %s", code, body)
	}

	for _, q := range []string{"SELECT * FROM read_csv('/etc/passwd')", "CREATE TABLE t AS SELECT 1", "SELECT * FROM nope", ""} {
		code, body := apiGet(t, hs, "/api/sql?q="+url.QueryEscape(q))
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"exit_code":1`) {
			t.Errorf("%q: %d %s, want 400 with exit code 1", q, code, body)
		}
	}
	if code, body := apiGet(t, hs, "/api/sql?limit=100000&q=SELECT+1"); code != http.StatusBadRequest {
		t.Errorf("limit=100000: %d %s", code, body)
	}
	if code, body := apiGet(t, hs, "/sql"); code != http.StatusOK || !strings.Contains(string(body), "/assets/sql.js") {
		t.Errorf("GET /sql: %d %.200s", code, body)
	}
}
