package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stateutil/stateutil/cmd/internal/render"
)

// screenshots is where -rewrite puts docs/serve.md's pictures of the UI.
const screenshots = "../docs/serve"

// chromium finds Debian's headless Chromium (scripts/deps.sh installs it).
// Where a run must be complete (CI, STATEUTIL_REQUIRE_BROWSER=1) a
// missing one fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("STATEUTIL_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is not installed (scripts/deps.sh installs it)")
	}
	t.Skip("chromium is not installed (scripts/deps.sh installs it); the browser tests did not run")
	return ""
}

// TestServeInBrowser drives the UI in one headless Chromium, a tab per
// page, and checks that the figures each page shows are the commands'
// JSON for the same snapshots. The page's own script marks main (and the
// parts it loads later) with data-ready once drawn; the tests wait on
// that, never on time.
func TestServeInBrowser(t *testing.T) {
	exe := chromium(t)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1300, 900),
		chromedp.Flag("lang", "en-US"), chromedp.Flag("font-render-hinting", "none"))...)
	defer cancel()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	hs := startServer(t, "", example, maxp4096)

	// From the list of snapshots, by the links a person clicks: each
	// snapshot's overview, and the first one's every page.
	t.Run("overview and navigation", func(t *testing.T) {
		tab := openTab(t, browser)
		navigate(t, tab, hs.URL+"/", `#main[data-ready="home"] #snapshots`)
		locations := []string{example, maxp4096}
		summaries := make([]map[string]any, len(locations))
		var want [][]string
		for id, loc := range locations {
			summaries[id] = commandJSON(t, 0, "inspect", loc, "-o", "json").(map[string]any)
			want = append(want, []string{strconv.Itoa(id), loc, summaries[id]["format"].(string), ""})
		}
		sameRows(t, "snapshots", tableRows(t, tab, "#snapshots"), want)
		for id, loc := range locations {
			act(t, tab, chromedp.Click(fmt.Sprintf(`#snapshots a[href="#/s/%d"]`, id), chromedp.ByQuery),
				chromedp.WaitVisible(`#main[data-ready="overview"] #operators`, chromedp.ByQuery))
			checkOverview(t, tab, summaries[id])
			clickNav(t, tab, fmt.Sprintf("#/s/%d/operator-state", id), `#main[data-ready="operator-state"]`)
			checkOperatorState(t, tab, commandJSON(t, 0, "inspect", loc, "--operator-state", "--values", "-o", "json").(map[string]any))
			clickNav(t, tab, fmt.Sprintf("#/s/%d/heat", id), `#main[data-ready="heat"] section[data-operator="word-counter"] .chart.heat[data-drawn="true"]`)
			checkHeatMap(t, tab, commandJSON(t, 0, "inspect", loc, "--key-groups", "-o", "json").(map[string]any), id == 0)
			if id == 0 {
				// The state browser opens on the first keyed state.
				clickNav(t, tab, "#/s/0/browse", `#main[data-ready="browse"] #page[data-ready="1"]`)
				var op, state string
				for _, o := range summaries[id]["operators"].([]any) {
					if ks := o.(map[string]any)["keyed_states"].([]any); op == "" && len(ks) > 0 {
						op, state = o.(map[string]any)["uid"].(string), ks[0].(map[string]any)["name"].(string)
					}
				}
				checkRecordsPage(t, tab, "first keyed state", dumpRecords(t, "dump", loc, "--operator", op, "--state", state, "--limit", "50"))
				clickNav(t, tab, "#/s/0/rescale", `#main[data-ready="rescale"] input[name="parallelism"]`)
			}
			act(t, tab, chromedp.Click(`header a.brand`, chromedp.ByQuery), chromedp.WaitVisible(`#main[data-ready="home"] #snapshots`, chromedp.ByQuery))
		}
	})

	t.Run("heat map", func(t *testing.T) {
		tab := openTab(t, browser)
		want := commandJSON(t, 0, "inspect", example, "--key-groups", "-o", "json").(map[string]any)
		navigate(t, tab, hs.URL+"/#/s/0/heat", `#main[data-ready="heat"] section[data-operator="word-counter"] .chart.heat[data-drawn="true"]`)
		checkHeatMap(t, tab, want, true)
		hoverKeyGroup(t, tab, "word-counter", 18)
		screenshot(t, tab, `section[data-operator="word-counter"]`, "heatmap.png")
	})

	t.Run("rescale preview", func(t *testing.T) {
		tab := openTab(t, browser)
		plan := commandJSON(t, 0, "rescale", example, "--parallelism", "5", "--max-parallelism", "256", "--dry-run", "-o", "json").(map[string]any)
		before := commandJSON(t, 0, "inspect", example, "--key-groups", "-o", "json").(map[string]any)
		navigate(t, tab, hs.URL+"/#/s/0/rescale", `#main[data-ready="rescale"] input[name="parallelism"]`)
		act(t, tab, chromedp.SetValue(`input[name="parallelism"]`, "5", chromedp.ByQuery), chromedp.SetValue(`input[name="max-parallelism"]`, "256", chromedp.ByQuery),
			chromedp.Click(`#main form button`, chromedp.ByQuery), chromedp.WaitVisible(`#plan[data-ready="parallelism=5&max-parallelism=256"]`, chromedp.ByQuery))
		for _, op := range plan["operators"].([]any) {
			op := op.(map[string]any)
			sec := fmt.Sprintf(`#plan section[data-operator=%q]`, op["uid"])
			var rows [][]string
			for _, s := range op["subtasks"].([]any) {
				s := s.(map[string]any)
				kg := s["key_groups"].(map[string]any)
				var sources []string
				for _, x := range s["sources"].([]any) {
					sources = append(sources, jsonNumber(x))
				}
				rows = append(rows, []string{jsonNumber(s["index"]), jsonNumber(kg["start"]) + "-" + jsonNumber(kg["end"]), strings.Join(sources, " "),
					jsonNumber(s["keyed_entries"]), jsonNumber(s["keyed_bytes"]), jsonNumber(s["operator_elements"])})
			}
			sameRows(t, sec+" .plan-subtasks", tableRows(t, tab, sec+" .plan-subtasks"), rows)
			newP, newMaxP := text(t, tab, sec+" .new-p"), text(t, tab, sec+" .new-maxp")
			target := op["new"].(map[string]any)
			if newP != jsonNumber(target["parallelism"]) || newMaxP != jsonNumber(target["max_parallelism"]) {
				t.Errorf("%s: shows parallelism %s, max parallelism %s; plan: %v", sec, newP, newMaxP, target)
			}
			if op["keyed_entries"].(float64) > 0 {
				skewBefore := ""
				for _, o := range before["operators"].([]any) {
					if o := o.(map[string]any); o["id"] == op["id"] {
						skewBefore = fmt.Sprintf("%.2f", o["subtask_skew"])
					}
				}
				if got, want := text(t, tab, sec+" .skew-before")+" -> "+text(t, tab, sec+" .skew-after"), skewBefore+" -> "+fmt.Sprintf("%.2f", op["keyed_skew"]); got != want {
					t.Errorf("%s: skew %s, want %s", sec, got, want)
				}
			}
		}
	})

	t.Run("key lookup", func(t *testing.T) {
		tab := openTab(t, browser)
		navigate(t, tab, hs.URL+"/#/s/0/browse?operator=word-counter&state=by-source", `#main[data-ready="browse"] #page[data-ready="1"]`)
		for _, key := range []string{"word-10", "word-3"} {
			want := commandJSON(t, 0, "get", example, "--operator", "word-counter", "--state", "by-source", "--key", key, "-o", "json").(map[string]any)
			act(t, tab, chromedp.SetValue(`#lookup-key`, key, chromedp.ByQuery), chromedp.Click(`form:has(#lookup-key) button`, chromedp.ByQuery),
				chromedp.WaitVisible(`#lookup[data-ready="found"]`, chromedp.ByQuery))
			if got := text(t, tab, "#lookup .kg") + "/" + text(t, tab, "#lookup .subtask"); got != jsonNumber(want["key_group"])+"/"+jsonNumber(want["subtask"]) {
				t.Errorf("%s: key group/subtask %s, get says %v/%v", key, got, want["key_group"], want["subtask"])
			}
			var shown [][]string
			act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#lookup .json-tree > .json-formatter-row > .json-formatter-children > .json-formatter-row')].map(r =>
				[r.querySelector('.json-formatter-key').textContent, r.querySelector('.json-formatter-number, .json-formatter-string, .json-formatter-boolean, .json-formatter-null').textContent])`, &shown))
			var wantRows [][]string
			value := want["value"].(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(value)) {
				wantRows = append(wantRows, []string{k + ":", jsonNumber(value[k])})
			}
			slices.SortFunc(shown, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
			sameRows(t, "lookup "+key, shown, wantRows)
			act(t, tab, chromedp.Evaluate(`document.getElementById('lookup').removeAttribute('data-ready')`, nil))
		}
		act(t, tab, chromedp.SetValue(`#lookup-key`, "no-such-word", chromedp.ByQuery), chromedp.Click(`form:has(#lookup-key) button`, chromedp.ByQuery),
			chromedp.WaitVisible(`#lookup[data-ready="not-found"]`, chromedp.ByQuery))
	})

	t.Run("state browser", func(t *testing.T) {
		tab := openTab(t, browser)
		records := dumpRecords(t, "dump", maxp4096, "--operator", "word-counter", "--state", "count")
		if len(records) <= 50 {
			t.Fatalf("%d records: too few for two pages", len(records))
		}
		navigate(t, tab, hs.URL+"/#/s/1/browse?operator=word-counter&state=count", `#main[data-ready="browse"] #page[data-ready="1"]`)
		for pageNo, from := 1, 0; from < len(records); pageNo, from = pageNo+1, from+50 {
			if pageNo > 1 {
				act(t, tab, chromedp.Click(`#next-page`, chromedp.ByQuery), chromedp.WaitVisible(fmt.Sprintf(`#page[data-ready="%d"]`, pageNo), chromedp.ByQuery))
			}
			pageRecords := records[from:min(from+50, len(records))]
			checkRecordsPage(t, tab, fmt.Sprintf("page %d", pageNo), pageRecords)
			// A value state's numbers, as the JSON tree draws them.
			var want, got []string
			for _, r := range pageRecords {
				want = append(want, jsonNumber(r["value"]))
			}
			act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#page .records tbody tr')].map(tr => tr.children[4].querySelector('.json-formatter-number').textContent)`, &got))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("page %d draws values %v, dump says %v", pageNo, got, want)
			}
		}
		var nextDisabled bool
		act(t, tab, chromedp.Evaluate(`document.getElementById('next-page').disabled`, &nextDisabled))
		if !nextDisabled {
			t.Error("the last page offers a next page")
		}
		back := (len(records)+49)/50 - 1
		act(t, tab, chromedp.Click(`#prev-page`, chromedp.ByQuery), chromedp.WaitVisible(fmt.Sprintf(`#page[data-ready="%d"]`, back), chromedp.ByQuery))
		checkRecordsPage(t, tab, fmt.Sprintf("page %d, back from the last", back), records[(back-1)*50:back*50])

		// Another state, chosen in the list: a map state, with its TTL.
		act(t, tab, chromedp.Evaluate(`(() => {
			const sel = document.getElementById('state-select');
			sel.value = [...sel.options].find(o => o.textContent.startsWith('word-counter (Keyed: count words) / by-source ')).value;
			sel.dispatchEvent(new Event('change'));
		})()`, nil), chromedp.WaitVisible(`#main[data-ready="browse"] #page[data-ready="1"]`, chromedp.ByQuery))
		if loc := currentHash(t, tab); loc != "#/s/1/browse?operator=word-counter&state=by-source" {
			t.Errorf("choosing by-source went to %s", loc)
		}
		checkRecordsPage(t, tab, "by-source page 1", dumpRecords(t, "dump", maxp4096, "--operator", "word-counter", "--state", "by-source", "--limit", "50"))
		act(t, tab, chromedp.SetValue(`#lookup-key`, "word-10", chromedp.ByQuery), chromedp.Click(`form:has(#lookup-key) button`, chromedp.ByQuery),
			chromedp.WaitVisible(`#lookup[data-ready="found"]`, chromedp.ByQuery))
		screenshot(t, tab, "", "state-browser.png")
	})

	t.Run("diff", func(t *testing.T) {
		tab := openTab(t, browser)
		want := commandJSON(t, 1, "diff", example, maxp4096, "--entries", "--values", "-o", "json").(map[string]any)
		navigate(t, tab, hs.URL+"/#/s/0", `#main[data-ready="overview"]`)
		clickNav(t, tab, "#/diff", `#main[data-ready="diff"] form`)
		act(t, tab, chromedp.SetValue(`#main form select[name="a"]`, "0", chromedp.ByQuery), chromedp.SetValue(`#main form select[name="b"]`, "1", chromedp.ByQuery),
			chromedp.Click(`#main form button`, chromedp.ByQuery), chromedp.WaitVisible(`#main[data-ready="diff"] #diff`, chromedp.ByQuery))
		if loc := currentHash(t, tab); loc != "#/diff?a=0&b=1" {
			t.Errorf("comparing 0 with 1 went to %s", loc)
		}
		for _, op := range want["operators"].([]any) {
			op := op.(map[string]any)
			sec := fmt.Sprintf(`#diff section[data-operator=%q]`, op["uid"])
			var counts [][]string
			for _, c := range op["counts"].([]any) {
				c := c.(map[string]any)
				counts = append(counts, []string{c["name"].(string), c["scope"].(string), jsonNumber(c["a"]), jsonNumber(c["b"]), jsonNumber(c["b"].(float64) - c["a"].(float64))})
			}
			if len(counts) > 0 {
				sameRows(t, sec+" .counts", tableRows(t, tab, sec+" .counts"), counts)
			}
			keys, _ := op["keys"].([]any)
			var wantKeys [][]string
			for _, k := range keys {
				k := k.(map[string]any)
				wantKeys = append(wantKeys, []string{k["state"].(string), jsonNumber(k["key_group"]), render.JSONText(k["key"]), k["change"].(string), valueOrDash(k, "old"), valueOrDash(k, "new")})
			}
			if len(wantKeys) > 0 {
				var got [][]string
				act(t, tab, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => [...tr.children].map((td, i) => {
					const tree = td.querySelector('.json-tree');
					return i < 4 ? td.textContent : tree ? tree.dataset.json : td.textContent;
				}))`, sec+" .keys tbody tr"), &got))
				for _, row := range got {
					for i := 4; i < len(row); i++ {
						row[i] = canonicalJSON(row[i])
					}
				}
				sameRows(t, sec+" .keys", got, wantKeys)
			}
		}
	})

	// A key, a value and an operator name holding invisible format
	// characters (U+202E shows "user-\u202Egnp.exe" as "user-exe.png"),
	// and values that are URLs: every such character is shown as its
	// escape, marked, on the overview, the state browser and the diff
	// page (in JSON trees as they unfold too), and no value is a link.
	t.Run("invisible characters and links", func(t *testing.T) {
		dir := t.TempDir()
		const key = "user-\u202egnp.exe"
		const uid = "ke\u202eyed"
		base, edited, renamed := filepath.Join(dir, "base.dump"), filepath.Join(dir, "edited.dump"), filepath.Join(dir, "renamed.dump")
		mustRun(t, "convert", "../testdata/flink/1.20.5/basic-hashmap-canonical/snapshot/savepoint-58fe20-3983f452098d", "--to", "memory", "--output", base)
		mustRun(t, "put", base, "--operator", "keyed", "--state", "last", "--key", key, "--value", `"https://evil.example/phish"`, "--output", filepath.Join(dir, "one.dump"))
		mustRun(t, "put", filepath.Join(dir, "one.dump"), "--operator", "keyed", "--state", "events", "--key", key,
			"--value", `["x\u200by", "https://evil.example/a"]`, "--output", edited)
		mustRun(t, "operator", "rename", edited, "--operator", "keyed", "--to", uid, "--output", renamed)
		hs := startServer(t, "", base, edited, renamed)
		tab := openTab(t, browser)
		// shownRaw reports text of the page that holds a format character
		// as it is.
		shownRaw := func() []string {
			var raw []string
			act(t, tab, chromedp.Evaluate(`document.body.innerText.split('\n').filter(l => /\p{Cf}/u.test(l))`, &raw))
			return raw
		}
		marked := func(sel string) []string {
			var got []string
			act(t, tab, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel), &got))
			return got
		}
		links := func() int {
			var n int
			act(t, tab, chromedp.Evaluate(`document.querySelectorAll('#main a[href^="http"], #main a[href^="//"], #main .json-formatter-url').length`, &n))
			return n
		}

		navigate(t, tab, hs.URL+"/#/s/2", `#main[data-ready="overview"] #operators`)
		if got := marked("#operators .format-char"); !reflect.DeepEqual(got, []string{`\u202E`}) {
			t.Errorf("overview: marked %q, want the operator name's U+202E", got)
		}
		if raw := shownRaw(); len(raw) > 0 {
			t.Errorf("overview shows format characters as they are: %q", raw)
		}

		// The state browser: the key on its page, its value, and the list
		// of another state, unfolded.
		navigate(t, tab, hs.URL+"/#/s/2/browse?operator="+url.QueryEscape(uid)+"&state=last", `#main[data-ready="browse"] #page[data-ready="1"]`)
		var option string
		act(t, tab, chromedp.Evaluate(`document.getElementById('state-select').selectedOptions[0].textContent`, &option))
		if !strings.HasPrefix(option, `ke\u202Eyed / last`) {
			t.Errorf("the state list shows %q, want the operator's name escaped", option)
		}
		row := `#page .records tbody tr:has(code.key .format-char)`
		for pageNo := 1; ; pageNo++ {
			var found bool
			act(t, tab, chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector(%q)`, row), &found))
			if found {
				break
			}
			if pageNo > 5 {
				t.Fatal("the edited key is on none of the first pages")
			}
			act(t, tab, chromedp.Click(`#next-page`, chromedp.ByQuery), chromedp.WaitVisible(fmt.Sprintf(`#page[data-ready="%d"]`, pageNo+1), chromedp.ByQuery))
		}
		var cells []string
		act(t, tab, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelector(%q).children].map(td => td.textContent)`, row), &cells))
		if len(cells) < 5 || cells[2] != `"user-\u202Egnp.exe"` || cells[4] != `"https://evil.example/phish"` {
			t.Errorf("the edited key's row shows %q", cells)
		}
		if n := links(); n > 0 {
			t.Errorf("the state browser has %d links out of values", n)
		}
		navigate(t, tab, hs.URL+"/#/s/2/browse?operator="+url.QueryEscape(uid)+"&state=events", `#main[data-ready="browse"] #page[data-ready="1"]`)
		act(t, tab, chromedp.SetValue(`#lookup-key`, key, chromedp.ByQuery), chromedp.Click(`form:has(#lookup-key) button`, chromedp.ByQuery),
			chromedp.WaitVisible(`#lookup[data-ready="found"]`, chromedp.ByQuery))
		if got := marked("#lookup .json-tree .format-char"); !reflect.DeepEqual(got, []string{`\u200B`}) {
			t.Errorf("the looked-up list marks %q, want its element's U+200B", got)
		}
		var tree string
		act(t, tab, chromedp.Evaluate(`document.querySelector('#lookup .json-tree').dataset.json`, &tree))
		if tree != "[\"x\u200by\",\"https://evil.example/a\"]" {
			t.Errorf("the tree's value is %q: the data changed, not only its display", tree)
		}
		if raw := shownRaw(); len(raw) > 0 {
			t.Errorf("the state browser shows format characters as they are: %q", raw)
		}
		if n := links(); n > 0 {
			t.Errorf("the looked-up value has %d links", n)
		}

		// The diff: the keys put, their values unfolded by a click.
		navigate(t, tab, hs.URL+"/#/diff?a=0&b=1", `#main[data-ready="diff"] #diff`)
		act(t, tab, chromedp.Evaluate(`document.querySelectorAll('#diff .keys .json-formatter-toggler-link').forEach(a => a.click())`, nil))
		if got := marked("#diff .keys code.key .format-char"); len(got) != 2 || got[0] != `\u202E` || got[1] != `\u202E` {
			t.Errorf("the diff marks %q in its keys, want U+202E in both keys put", got)
		}
		if got := marked("#diff .keys .json-tree .format-char"); !reflect.DeepEqual(got, []string{`\u200B`}) {
			t.Errorf("the diff's unfolded values mark %q, want U+200B", got)
		}
		if raw := shownRaw(); len(raw) > 0 {
			t.Errorf("the diff shows format characters as they are: %q", raw)
		}
		if n := links(); n > 0 {
			t.Errorf("the diff has %d links out of values", n)
		}
	})

	// The report opens from a file with the network off, and asks for
	// nothing: no request leaves the page but for the file itself.
	t.Run("inspect --html offline", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "report.html")
		mustRun(t, "inspect", example, "--html", file)
		if code, _, _ := run(t, "inspect", example, "--html", file); code != ExitUsage {
			t.Errorf("inspect --html onto an existing file: exit %d, want %d", code, ExitUsage)
		}
		tab := openTab(t, browser)
		var mu sync.Mutex
		var requests []string
		chromedp.ListenTarget(tab, func(ev any) {
			if e, ok := ev.(*network.EventRequestWillBeSent); ok {
				mu.Lock()
				requests = append(requests, e.Request.URL)
				mu.Unlock()
			}
		})
		act(t, tab, network.Enable(), network.EmulateNetworkConditions(true, 0, -1, -1))
		navigate(t, tab, "file://"+file, `#main[data-ready="overview"] #totals`)
		checkOverview(t, tab, commandJSON(t, 0, "inspect", example, "-o", "json").(map[string]any))
		clickNav(t, tab, "#/s/0/heat", `#main[data-ready="heat"] section[data-operator="word-counter"] .chart.heat[data-drawn="true"]`)
		checkHeatMap(t, tab, commandJSON(t, 0, "inspect", example, "--key-groups", "-o", "json").(map[string]any), true)
		clickNav(t, tab, "#/s/0/operator-state", `#main[data-ready="operator-state"]`)
		checkOperatorState(t, tab, commandJSON(t, 0, "inspect", example, "--operator-state", "--values", "-o", "json").(map[string]any))
		mu.Lock()
		defer mu.Unlock()
		for _, u := range requests {
			if u != "file://"+file {
				t.Errorf("the report requested %s", u)
			}
		}
	})
}

// openTab opens a tab that fails the test on any script error or
// Content-Security-Policy violation.
func openTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	tab, cancelTimeout := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(func() {
		var violations []string
		if err := chromedp.Run(tab, chromedp.Evaluate(`window.cspViolations || []`, &violations)); err == nil && len(violations) > 0 {
			t.Errorf("Content-Security-Policy violations: %v", violations)
		}
		cancelTimeout()
		cancel()
	})
	chromedp.ListenTarget(tab, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			t.Errorf("script error: %s", e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				t.Errorf("console error: %v", e.Args)
			}
		}
	})
	act(t, tab, chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`window.cspViolations = [];
			document.addEventListener('securitypolicyviolation', e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));`).Do(ctx)
		return err
	}))
	return tab
}

func act(t *testing.T, tab context.Context, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(tab, actions...); err != nil {
		t.Fatal(err)
	}
}

func navigate(t *testing.T, tab context.Context, url, ready string) {
	t.Helper()
	act(t, tab, chromedp.Navigate(url), chromedp.WaitVisible(ready, chromedp.ByQuery))
}

func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	var s string
	act(t, tab, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// tableRows reads a table's body as shown, taking a cell's exact number
// where it shows one beside its human form.
func tableRows(t *testing.T, tab context.Context, sel string) [][]string {
	t.Helper()
	var rows [][]string
	act(t, tab, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => [...tr.children].map(td => {
		const n = td.querySelector(':scope > .num, :scope > span > .num');
		return n && td.querySelectorAll('.num').length === 1 ? n.textContent : td.textContent;
	}))`, sel+" tbody tr"), &rows))
	return rows
}

func sameRows(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s shows\n%v\nthe command's JSON says\n%v", what, got, want)
	}
}

func clickNav(t *testing.T, tab context.Context, href, ready string) {
	t.Helper()
	act(t, tab, chromedp.Click(fmt.Sprintf(`nav a[href=%q]`, href), chromedp.ByQuery), chromedp.WaitVisible(ready, chromedp.ByQuery))
}

func currentHash(t *testing.T, tab context.Context) string {
	t.Helper()
	var hash string
	act(t, tab, chromedp.Evaluate(`decodeURIComponent(location.hash)`, &hash))
	return hash
}

// canonicalJSON is a JSON text as render.JSONText writes it (keys sorted); any
// other text is kept as it is.
func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return render.JSONText(v)
}

// valueOrDash is a diff key's old or new value as the page shows it.
func valueOrDash(k map[string]any, field string) string {
	if v, ok := k[field]; ok {
		return render.JSONText(v)
	}
	return "-"
}

// checkOverview compares an overview page with inspect -o json: the
// totals, and per operator its parallelism, states, entries and bytes.
func checkOverview(t *testing.T, tab context.Context, summary map[string]any) {
	t.Helper()
	totals := summary["totals"].(map[string]any)
	var shown []string
	act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#totals > .num, #totals > span > .num')].map(n => n.textContent)`, &shown))
	if want := []string{jsonNumber(totals["operators"]), jsonNumber(totals["subtasks"]), jsonNumber(totals["keyed_entries"]),
		jsonNumber(totals["keyed_bytes"]), jsonNumber(totals["operator_elements"]), jsonNumber(totals["operator_bytes"])}; !reflect.DeepEqual(shown, want) {
		t.Errorf("%s: totals %v, inspect: %v", summary["location"], shown, want)
	}
	var got, want [][]string
	var states [][][]string
	act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#operators tbody tr')].map(tr => [3, 4].map(i => [...tr.children[i].querySelectorAll('li')].map(li => li.textContent)))`, &states))
	for i, row := range tableRows(t, tab, "#operators") {
		got = append(got, []string{row[0], row[1], row[2], row[5], row[6], strings.Join(states[i][0], "; "), strings.Join(states[i][1], "; ")})
	}
	for _, op := range summary["operators"].([]any) {
		op := op.(map[string]any)
		name := op["uid"].(string)
		switch {
		case name == "":
			name = cmp.Or(op["name"].(string), op["id"].(string))
		case op["name"] != "" && op["name"] != name:
			name += " (" + op["name"].(string) + ")"
		}
		var keyed, operator []string
		for _, k := range op["keyed_states"].([]any) {
			k := k.(map[string]any)
			s := k["name"].(string) + ": " + k["kind"].(string)
			if ttl, ok := k["ttl"].(map[string]any); ok {
				s += fmt.Sprintf(" (ttl %s ms, %s, %s)", jsonNumber(ttl["ttl_ms"]), ttl["update"], ttl["visibility"])
			}
			keyed = append(keyed, s)
		}
		for _, o := range op["operator_states"].([]any) {
			o := o.(map[string]any)
			operator = append(operator, o["name"].(string)+": "+o["mode"].(string))
		}
		want = append(want, []string{name, jsonNumber(op["parallelism"]), jsonNumber(op["max_parallelism"]),
			jsonNumber(op["keyed_entries"].(float64) + op["operator_elements"].(float64)), jsonNumber(op["keyed_bytes"].(float64) + op["operator_bytes"].(float64)),
			strings.Join(keyed, "; "), strings.Join(operator, "; ")})
	}
	sameRows(t, fmt.Sprintf("%s operators", summary["location"]), got, want)
}

// checkOperatorState compares an operator-state page with inspect
// --operator-state --values -o json: elements per subtask, and the values.
func checkOperatorState(t *testing.T, tab context.Context, ops map[string]any) {
	t.Helper()
	for _, op := range ops["operators"].([]any) {
		op := op.(map[string]any)
		var want, wantValues [][]string
		for _, st := range op["states"].([]any) {
			st := st.(map[string]any)
			var per []string
			for _, n := range st["elements_per_subtask"].([]any) {
				per = append(per, jsonNumber(n))
			}
			want = append(want, []string{st["name"].(string), st["mode"].(string), st["element_type"].(map[string]any)["name"].(string), strings.Join(per, " ")})
			values, _ := st["values"].([]any)
			for _, v := range values {
				v := v.(map[string]any)
				wantValues = append(wantValues, []string{st["name"].(string), jsonNumber(v["subtask"]), render.JSONText(v["value"])})
			}
		}
		sec := fmt.Sprintf(`#main section[data-operator=%q]`, op["uid"])
		sameRows(t, sec+" .states", tableRows(t, tab, sec+" .states"), want)
		var got [][]string
		act(t, tab, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => [tr.children[0].textContent, tr.children[1].textContent, tr.children[2].querySelector('.json-tree').dataset.json])`,
			sec+" .values tbody tr"), &got))
		for _, row := range got {
			row[2] = canonicalJSON(row[2])
		}
		sameRows(t, sec+" .values", got, wantValues)
	}
}

// checkRecordsPage compares the state browser's page with dump's
// records: key group, subtask, key, namespace, value and TTL.
func checkRecordsPage(t *testing.T, tab context.Context, what string, records []map[string]any) {
	t.Helper()
	var want, got [][]string
	for _, r := range records {
		ns, ttl := "", ""
		if v, ok := r["namespace"]; ok {
			ns = render.JSONText(v)
		}
		if v, ok := r["ttl"].(map[string]any); ok {
			ttl = render.JSONText(withoutNow(v))
		}
		want = append(want, []string{jsonNumber(r["key_group"]), jsonNumber(r["subtask"]), render.JSONText(r["key"]), ns, render.JSONText(r["value"]), ttl})
	}
	act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#page .records tbody tr')].map(tr => [...tr.children].map(td => {
		const tree = td.querySelector('.json-tree');
		return tree ? tree.dataset.json : td.textContent;
	}))`, &got))
	for _, row := range got {
		row[4] = canonicalJSON(row[4])
		var ttl map[string]any
		if json.Unmarshal([]byte(row[5]), &ttl) == nil {
			row[5] = render.JSONText(withoutNow(ttl))
		}
	}
	if len(records) == 0 {
		t.Fatalf("%s: dump gave no records to compare", what)
	}
	sameRows(t, what, got, want)
}

// withoutNow is a record's TTL but for the moment it was judged at, which
// is the page's request's, not the command's.
func withoutNow(ttl map[string]any) map[string]any {
	ttl = maps.Clone(ttl)
	delete(ttl, "now")
	return ttl
}

// checkHeatMap compares a heat-map page with inspect --key-groups: the
// skew, the subtasks, the hottest key groups and, with hover, the tooltip
// shown when the pointer rests on a key group's cell (a cell wide enough
// to point at: with thousands of key groups a cell is under a pixel).
func checkHeatMap(t *testing.T, tab context.Context, want map[string]any, hover bool) {
	t.Helper()
	for _, op := range want["operators"].([]any) {
		op := op.(map[string]any)
		uid := op["uid"].(string)
		sec := fmt.Sprintf(`section[data-operator=%q]`, uid)
		if got, want := text(t, tab, sec+" .kg-skew")+" "+text(t, tab, sec+" .subtask-skew"), fmt.Sprintf("%.2f %.2f", op["key_group_skew"], op["subtask_skew"]); got != want {
			t.Errorf("%s: skew %s, want %s", uid, got, want)
		}
		p, maxP := int(op["parallelism"].(float64)), int(op["max_parallelism"].(float64))
		var subtasks [][]string
		for _, s := range op["subtasks"].([]any) {
			s := s.(map[string]any)
			i := int(s["index"].(float64))
			subtasks = append(subtasks, []string{strconv.Itoa(i), fmt.Sprintf("%d-%d", (i*maxP+p-1)/p, ((i+1)*maxP-1)/p), jsonNumber(s["entries"]), jsonNumber(s["bytes"])})
		}
		sameRows(t, uid+" subtasks", tableRows(t, tab, sec+" .subtasks"), subtasks)
		groups := slices.Clone(op["key_groups"].([]any))
		slices.SortStableFunc(groups, func(a, b any) int {
			return int(b.(map[string]any)["bytes"].(float64) - a.(map[string]any)["bytes"].(float64))
		})
		var hottest [][]string
		for _, g := range groups[:min(10, len(groups))] {
			g := g.(map[string]any)
			hottest = append(hottest, []string{jsonNumber(g["key_group"]), jsonNumber(g["subtask"]), jsonNumber(g["entries"]), jsonNumber(g["bytes"])})
		}
		sameRows(t, uid+" hottest key groups", tableRows(t, tab, sec+" .hottest"), hottest)
		if !hover {
			continue
		}
		// Hover the hottest key group's bytes cell and the last key
		// group's (empty, in the last subtask).
		for _, kg := range []int{int(groups[0].(map[string]any)["key_group"].(float64)), maxP - 1} {
			tip := hoverKeyGroup(t, tab, uid, kg)
			got := []string{text(t, tab, tip+" .tip-kg"), text(t, tab, tip+" .tip-subtask"), text(t, tab, tip+" .tip-range"), text(t, tab, tip+" .tip-bytes"), text(t, tab, tip+" .tip-entries")}
			wantTip := []string{strconv.Itoa(kg), strconv.Itoa(p - 1), subtasks[p-1][1], "0", "0"}
			for _, g := range op["key_groups"].([]any) {
				if g := g.(map[string]any); int(g["key_group"].(float64)) == kg {
					sub := int(g["subtask"].(float64))
					wantTip = []string{strconv.Itoa(kg), strconv.Itoa(sub), subtasks[sub][1], jsonNumber(g["bytes"]), jsonNumber(g["entries"])}
				}
			}
			if !reflect.DeepEqual(got, wantTip) {
				t.Errorf("%s: tooltip of key group %d shows %v (key group, subtask, its key groups, bytes, entries), want %v", uid, kg, got, wantTip)
			}
		}
	}
}

// hoverKeyGroup rests the pointer on the bytes cell of a key group in an
// operator's heat map, and returns the selector of the tooltip it shows.
func hoverKeyGroup(t *testing.T, tab context.Context, uid string, kg int) string {
	t.Helper()
	var at []float64
	act(t, tab, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const chart = window.stateutilCharts[%q];
		chart.getDom().scrollIntoView({block: 'center'});
		const [x, y] = chart.convertToPixel({seriesIndex: 0}, [%d, 0]);
		const box = chart.getDom().getBoundingClientRect();
		return [box.left + x, box.top + y];
	})()`, uid, kg), &at))
	tip := fmt.Sprintf(`section[data-operator=%q] .heat-tooltip .tip[data-key-group="%d"]`, uid, kg)
	act(t, tab, chromedp.ActionFunc(func(ctx context.Context) error {
		return input.DispatchMouseEvent(input.MouseMoved, at[0], at[1]).Do(ctx)
	}), chromedp.WaitReady(tip, chromedp.ByQuery))
	return tip
}

// screenshot saves, with -rewrite, a picture for docs/serve.md of the
// element sel selects ("": the window, from the page's top).
func screenshot(t *testing.T, tab context.Context, sel, name string) {
	t.Helper()
	if !*rewrite {
		return
	}
	var png []byte
	if sel == "" {
		act(t, tab, chromedp.Evaluate(`window.scrollTo(0, 0)`, nil), chromedp.CaptureScreenshot(&png))
	} else {
		act(t, tab, chromedp.Screenshot(sel, &png, chromedp.ByQuery))
	}
	if err := os.MkdirAll(screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func dumpRecords(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(mustRun(t, args...)) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// jsonNumber is a JSON number as the UI shows it: an integer in full.
func jsonNumber(v any) string {
	f := v.(float64)
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
