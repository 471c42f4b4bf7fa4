package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
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
)

// screenshots is where -rewrite puts the README's pictures of the UI.
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

	t.Run("heat map", func(t *testing.T) {
		tab := openTab(t, browser)
		want := commandJSON(t, 0, "inspect", example, "--key-groups", "-o", "json").(map[string]any)
		navigate(t, tab, hs.URL+"/#/s/0/heat", `#main[data-ready="heat"] section[data-operator="word-counter"] .chart.heat[data-drawn="true"]`)
		checkHeatMap(t, tab, want)
		screenshot(t, tab, "heatmap.png")
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
		screenshot(t, tab, "state-browser.png")
		for pageNo, from := 1, 0; from < len(records); pageNo, from = pageNo+1, from+50 {
			if pageNo > 1 {
				act(t, tab, chromedp.Click(`#next-page`, chromedp.ByQuery), chromedp.WaitVisible(fmt.Sprintf(`#page[data-ready="%d"]`, pageNo), chromedp.ByQuery))
			}
			var want [][]string
			for _, r := range records[from:min(from+50, len(records))] {
				want = append(want, []string{jsonNumber(r["key_group"]), jsonNumber(r["subtask"]), jsonText(r["key"]), jsonNumber(r["value"])})
			}
			var got [][]string
			act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#page .records tbody tr')].map(tr =>
				[tr.children[0].textContent, tr.children[1].textContent, tr.children[2].textContent, tr.children[4].querySelector('.json-formatter-number').textContent])`, &got))
			sameRows(t, fmt.Sprintf("page %d", pageNo), got, want)
		}
		var nextDisabled bool
		act(t, tab, chromedp.Evaluate(`document.getElementById('next-page').disabled`, &nextDisabled))
		if !nextDisabled {
			t.Error("the last page offers a next page")
		}
	})

	t.Run("diff", func(t *testing.T) {
		tab := openTab(t, browser)
		want := commandJSON(t, 1, "diff", example, maxp4096, "--entries", "--values", "-o", "json").(map[string]any)
		navigate(t, tab, hs.URL+"/#/diff?a=0&b=1", `#main[data-ready="diff"] #diff`)
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
				wantKeys = append(wantKeys, []string{k["state"].(string), jsonNumber(k["key_group"]), jsonText(k["key"]), k["change"].(string)})
			}
			if len(wantKeys) > 0 {
				got := tableRows(t, tab, sec+" .keys")
				for i := range got {
					got[i] = got[i][:4]
				}
				sameRows(t, sec+" .keys", got, wantKeys)
			}
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
		summary := commandJSON(t, 0, "inspect", example, "-o", "json").(map[string]any)
		totals := summary["totals"].(map[string]any)
		var shown []string
		act(t, tab, chromedp.Evaluate(`[...document.querySelectorAll('#totals > .num, #totals > span > .num')].map(n => n.textContent)`, &shown))
		if want := []string{jsonNumber(totals["operators"]), jsonNumber(totals["subtasks"]), jsonNumber(totals["keyed_entries"]),
			jsonNumber(totals["keyed_bytes"]), jsonNumber(totals["operator_elements"]), jsonNumber(totals["operator_bytes"])}; !reflect.DeepEqual(shown, want) {
			t.Errorf("report totals %v, inspect: %v", shown, want)
		}
		act(t, tab, chromedp.Click(`nav a[href="#/s/0/heat"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#main[data-ready="heat"] section[data-operator="word-counter"] .chart.heat[data-drawn="true"]`, chromedp.ByQuery))
		checkHeatMap(t, tab, commandJSON(t, 0, "inspect", example, "--key-groups", "-o", "json").(map[string]any))
		act(t, tab, chromedp.Click(`nav a[href="#/s/0/operator-state"]`, chromedp.ByQuery), chromedp.WaitVisible(`#main[data-ready="operator-state"]`, chromedp.ByQuery))
		ops := commandJSON(t, 0, "inspect", example, "--operator-state", "--values", "-o", "json").(map[string]any)
		for _, op := range ops["operators"].([]any) {
			op := op.(map[string]any)
			var want [][]string
			for _, st := range op["states"].([]any) {
				st := st.(map[string]any)
				var per []string
				for _, n := range st["elements_per_subtask"].([]any) {
					per = append(per, jsonNumber(n))
				}
				want = append(want, []string{st["name"].(string), st["mode"].(string), st["element_type"].(map[string]any)["name"].(string), strings.Join(per, " ")})
			}
			sec := fmt.Sprintf(`#main section[data-operator=%q] .states`, op["uid"])
			sameRows(t, sec, tableRows(t, tab, sec), want)
		}
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

// checkHeatMap compares a heat-map page with inspect --key-groups: the
// skew, the subtasks, the hottest key groups, and the tooltip shown when
// the pointer rests on a key group's cell.
func checkHeatMap(t *testing.T, tab context.Context, want map[string]any) {
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
		// Hover the hottest key group's bytes cell and the last key
		// group's (empty, in the last subtask).
		for _, kg := range []int{int(groups[0].(map[string]any)["key_group"].(float64)), maxP - 1} {
			var at []float64
			act(t, tab, chromedp.Evaluate(fmt.Sprintf(`(() => {
				const chart = window.stateutilCharts[%q];
				chart.getDom().scrollIntoView({block: 'center'});
				const [x, y] = chart.convertToPixel({seriesIndex: 0}, [%d, 0]);
				const box = chart.getDom().getBoundingClientRect();
				return [box.left + x, box.top + y];
			})()`, uid, kg), &at))
			tip := fmt.Sprintf(`%s .heat-tooltip .tip[data-key-group="%d"]`, sec, kg)
			act(t, tab, chromedp.ActionFunc(func(ctx context.Context) error {
				return input.DispatchMouseEvent(input.MouseMoved, at[0], at[1]).Do(ctx)
			}), chromedp.WaitReady(tip, chromedp.ByQuery))
			got := []string{text(t, tab, tip+" .tip-kg"), text(t, tab, tip+" .tip-subtask"), text(t, tab, tip+" .tip-bytes"), text(t, tab, tip+" .tip-entries")}
			wantTip := []string{strconv.Itoa(kg), strconv.Itoa(p - 1), "0", "0"}
			for _, g := range op["key_groups"].([]any) {
				if g := g.(map[string]any); int(g["key_group"].(float64)) == kg {
					wantTip = []string{strconv.Itoa(kg), jsonNumber(g["subtask"]), jsonNumber(g["bytes"]), jsonNumber(g["entries"])}
				}
			}
			if !reflect.DeepEqual(got, wantTip) {
				t.Errorf("%s: tooltip of key group %d shows %v (key group, subtask, bytes, entries), want %v", uid, kg, got, wantTip)
			}
		}
	}
}

// screenshot saves the tab's page for the README, with -rewrite.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if !*rewrite {
		return
	}
	var png []byte
	act(t, tab, chromedp.CaptureScreenshot(&png))
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
