package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/stateutil/stateutil/snapshot/snaptest"
)

// commandDocs is the manual's reference: a markdown page per command and a
// man page per command, generated from the command tree, so that they say
// what --help says.
const commandDocs = "../docs/commands"

// manHeader is fixed, so that the pages do not change with the day or the
// machine they are generated on.
var manHeader = doc.GenManHeader{
	Section: "1",
	Date:    func() *time.Time { t := time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC); return &t }(),
	Source:  "stateutil",
	Manual:  "stateutil manual",
}

// documentedTree is the command tree as the manual shows it: cobra's help
// and completion commands made, no "auto generated" dates, and no flag
// default taken from this machine's environment.
func documentedTree(t *testing.T) *cobra.Command {
	t.Setenv("STATEUTIL_YARN_AM_CLASSPATH", "")
	root := NewRootCommand(nil, nil)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Long = markdownLong(c.Long)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// markdownLong is a command's help text, written for a terminal, as the
// markdown the pages are made of, saying the same: indented lines (the exit
// codes, lists, tables) stay as they are in a code block, and the prose's
// markdown characters are escaped, so that "<checkpoint-dir>" is not taken
// for HTML and dropped.
func markdownLong(long string) string {
	var b strings.Builder
	inBlock, prev := false, ""
	for _, line := range strings.Split(long, "\n") {
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		switch {
		case indented && !inBlock:
			if prev != "" {
				b.WriteString("\n")
			}
			b.WriteString("```\n")
			inBlock = true
		case !indented && inBlock:
			b.WriteString("```\n")
			if line != "" {
				b.WriteString("\n")
			}
			inBlock = false
		}
		if inBlock {
			b.WriteString(line + "\n")
		} else {
			b.WriteString(markdownEscaper.Replace(line) + "\n")
		}
		prev = line
	}
	if inBlock {
		b.WriteString("```\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// markdownEscaper escapes what markdown would read as markup in prose.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`,
	"[", `\[`, "]", `\]`, "|", `\|`, "#", `\#`)

// generateCommandDocs writes the markdown pages into dir and the man pages
// into dir/man.
func generateCommandDocs(t *testing.T, dir string) {
	t.Helper()
	root := documentedTree(t)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "man")
	if err := os.MkdirAll(man, 0o755); err != nil {
		t.Fatal(err)
	}
	header := manHeader
	if err := doc.GenManTree(root, &header, man); err != nil {
		t.Fatal(err)
	}
}

// readPages is every generated page under dir (markdown and man), by its
// path relative to dir.
func readPages(t *testing.T, dir string) map[string]string {
	t.Helper()
	pages := map[string]string{}
	for _, pattern := range []string{"*.md", "man/*.1"} {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, f)
			pages[rel] = string(b)
		}
	}
	return pages
}

// TestDocCommandPages fails when docs/commands is not what the command tree
// generates; -rewrite (make docs) writes it again.
func TestDocCommandPages(t *testing.T) {
	generated := t.TempDir()
	generateCommandDocs(t, generated)
	want := readPages(t, generated)
	if len(want) == 0 {
		t.Fatal("the command tree generated no pages")
	}
	if *rewrite {
		for page := range readPages(t, commandDocs) {
			if err := os.Remove(filepath.Join(commandDocs, page)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(commandDocs, "man"), 0o755); err != nil {
			t.Fatal(err)
		}
		for page, text := range want {
			if err := os.WriteFile(filepath.Join(commandDocs, page), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if diff := snaptest.TreeDiff(readPages(t, commandDocs), want); diff != "" {
		t.Errorf("docs/commands is not what the command tree generates (added: a command with no page; changed: a page that is not its command's help; removed: a page of no command). Run `make docs` and read the diff: %s", diff)
	}
}

// TestDocPagesAreReproducible generates the pages twice, the second time
// under another date and working directory, and wants the same bytes.
func TestDocPagesAreReproducible(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	module, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	generateCommandDocs(t, first)
	t.Setenv("SOURCE_DATE_EPOCH", "0")
	t.Chdir(second)
	generateCommandDocs(t, second)
	a, b := readPages(t, first), readPages(t, second)
	if len(a) != len(b) {
		t.Fatalf("%d pages, then %d", len(a), len(b))
	}
	for page, text := range a {
		if b[page] != text {
			t.Errorf("%s differs between two generations", page)
		}
		for _, host := range []string{first, second, module, os.Getenv("HOME")} {
			if len(host) > 1 && strings.Contains(text, host) {
				t.Errorf("%s names the path %s of the machine it was made on", page, host)
			}
		}
	}
}

// TestHelpHasExamplesAndExitCodes: every command with a page has examples
// and says its exit codes, since its page is made from its help.
func TestHelpHasExamplesAndExitCodes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		if c.HasParent() && c.Example == "" {
			t.Errorf("%s: no examples in its help", c.CommandPath())
		}
		if !strings.Contains(c.Long, "Exit codes:") {
			t.Errorf("%s: its help does not say its exit codes", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(documentedTree(t))
}

// TestHelpGroupsEveryCommand: the root's help lists every command under one
// of its groups (look, change, scale out, other), none under cobra's
// "Additional Commands".
func TestHelpGroupsEveryCommand(t *testing.T) {
	root := documentedTree(t)
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.GroupID == "" {
			t.Errorf("%s is in no group", c.Name())
		}
	}
}

// The root's help: its commands in their groups.
func TestGoldenHelp(t *testing.T) {
	runGolden(t, "help-root", "--help")
}
