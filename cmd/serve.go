package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/internal/flagfile"
	"github.com/stateutil/stateutil/serve"
)

type serveOptions struct {
	source    sourceFlags
	listen    string
	token     tokenFlag
	tokenFile string
	// generated says the token was made up at start, to be printed.
	generated bool
	// limits and now stand in for serve's defaults in tests.
	limits serve.Limits
	now    func() time.Time
}

// generateToken is --token alone: a random token.
const generateToken = "generate"

// tokenEnv names the environment variable a token may come from.
const tokenEnv = "STATEUTIL_SERVE_TOKEN"

// serveMemoryLimit is the Go runtime's soft memory limit while serving
// (unless GOMEMLIMIT sets one): the views' budget and 48 MiB for the rest
// (connections, readers, what a view's estimate missed, the runtime's
// own). Near it the collector works harder rather than let garbage grow
// the process. What the limit does not see, the binary's own pages
// (about 55 MiB resident, DuckDB's among them) and C libraries' memory,
// must fit in what is left of serve's 256 MiB.
var serveMemoryLimit = serve.DefaultLimits.ViewBytes + 48<<20

func newServeCommand(e *env) *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:   "serve SNAPSHOT... [--listen 127.0.0.1:8080] [--token | --token-file FILE]",
		Short: "Browse snapshots in a local web UI: heat maps, state, diff, rescale preview",
		Long: `Serve a web UI and a JSON API over the snapshots named, until interrupted:
an overview of each (as inspect), key-group heat maps with subtask boundaries and skew
(inspect --key-groups), a rescale preview (rescale --dry-run), a state browser that pages
through a state in key-group order and looks keys up (dump, get), operator state with
its values (inspect --operator-state --values), and a diff of two snapshots (diff
--entries --values). The API answers in the commands' -o json schemas; see
docs/serve.md.

It only reads. Only the snapshots named here can be opened, by their position (0, 1,
...); no request names a path. The UI is embedded in the binary and makes no request
anywhere but to this server; it shows invisible format characters (such as U+202E,
which reverses text) as escapes, \u202E, marked, and no link from a snapshot's values.

It listens on loopback only unless a token is required: any other address needs one.
--token alone makes a random one (32 bytes) and prints it; --token-file FILE reads one
from a file, $STATEUTIL_SERVE_TOKEN from the environment, and --token=TOKEN from the
command line, where other local users can see it (ps). A token must stand for 16 random
bytes or more: at least 24 characters, 10 of them different, of letters, digits and
- . _ ~ + / = (openssl rand -hex 16); any other is refused (exit 1). Every request
must carry it, as "Authorization: Bearer TOKEN" or as the cookie (HttpOnly,
SameSite=Strict) that the one-time URL printed at start sets in a browser. After 10
wrong tokens it checks one more a second at most, and answers 429 to tokens in between.

Requests that a page of another origin makes a browser send (its Origin, or
Sec-Fetch-Site cross-site or same-site) are refused with 403 before any work, token or
not, but for following a link to the UI's page or the login URL; without a token, a Host
that is not a loopback name is refused too (421).

` + limitsHelp() + `

` + exitCodeHelp,
		Example: `  stateutil serve ./savepoint-1 ./savepoint-2
  stateutil serve ./chk-42 --listen 127.0.0.1:9000
  stateutil serve hdfs://nn:8020/sp/job-7 --listen 0.0.0.0:8080 --token
  stateutil serve ./sp --listen 0.0.0.0:8080 --token-file /run/secrets/stateutil-token
  STATEUTIL_SERVE_TOKEN="$(openssl rand -hex 16)" stateutil serve ./sp --listen 0.0.0.0:8080`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			return o.run(c, e, args)
		},
		ValidArgsFunction: completeFiles,
	}
	o.source.add(c)
	c.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on, HOST:PORT (port 0: any free one)")
	o.token.positional = c.Flags().NArg
	c.Flags().Var(&o.token, "token", "require a token of every request (needed to listen on other than loopback): alone, a random one, printed; =TOKEN, this one")
	c.Flags().Lookup("token").NoOptDefVal = generateToken
	c.Flags().StringVar(&o.tokenFile, "token-file", "", "require the token this file holds (surrounding white space ignored)")
	return c
}

// limitsHelp says what serve.DefaultLimits are.
func limitsHelp() string {
	l := serve.DefaultLimits
	return fmt.Sprintf(`It keeps %d connections at most: past that, the one idle longest is closed, or, when
every one is being answered, the new one gets 503. A request must arrive within %v of
its first byte, an answer is cut %v after its first byte, and an idle connection is
closed after %v. Computed views (plans, diffs, pages) share %d MiB, the least recently
used dropped first; a request that finds it taken waits its turn, and past %d waiting
gets 503 with Retry-After. The Go runtime's memory limit is %d MiB (unless GOMEMLIMIT
sets one).`, l.MaxConns, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.ViewBytes>>20, l.MaxWaiting, serveMemoryLimit>>20)
}

// tokenFlag is --token. Alone it stands for generateToken, and what
// follows it is not its value: it records where it came among the
// arguments, so that "--token SECRET" is refused rather than SECRET
// served as a snapshot.
type tokenFlag struct {
	value      string
	set        bool
	positional func() int // the arguments parsed so far
	argsBefore int
}

func (f *tokenFlag) String() string { return f.value }
func (f *tokenFlag) Type() string   { return "string" }
func (f *tokenFlag) Set(v string) error {
	f.value, f.set, f.argsBefore = v, true, f.positional()
	return nil
}

func (o *serveOptions) validate(args []string) error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usageErrorf("--listen %q: want HOST:PORT", o.listen)
	}
	if err := o.resolveToken(args); err != nil {
		return err
	}
	if !serve.IsLoopback(o.listen) && o.token.value == "" {
		return usageErrorf("--listen %q is not a loopback address: give --token, --token-file or $%s to serve it there", o.listen, tokenEnv)
	}
	_, err := o.source.openOptions()
	return err
}

// resolveToken settles the token from --token, --token-file or the
// environment, in that order, and checks it.
func (o *serveOptions) resolveToken(args []string) error {
	from := "--token"
	switch {
	case o.token.set && o.tokenFile != "":
		return usageErrorf("give --token or --token-file, not both")
	case o.token.value == generateToken:
		if len(args) > o.token.argsBefore {
			return usageErrorf("--token takes its value after =, as --token=TOKEN: %q after it would be served as a snapshot (put the snapshots before --token to have a random token made)", args[o.token.argsBefore])
		}
		tok, err := serve.NewToken()
		if err != nil {
			return err
		}
		o.token.value, o.generated = tok, true
		return nil
	case o.tokenFile != "":
		tok, err := readTokenFile(o.tokenFile)
		if err != nil {
			return err
		}
		o.token.value, from = tok, fmt.Sprintf("--token-file %q", o.tokenFile)
	case !o.token.set:
		o.token.value, from = os.Getenv(tokenEnv), "$"+tokenEnv
		if o.token.value == "" {
			return nil
		}
	}
	if err := serve.CheckToken(o.token.value); err != nil {
		return usageErrorf("%s: %s", from, err)
	}
	return nil
}

// maxTokenFile bounds what --token-file reads.
const maxTokenFile = 4 << 10

func readTokenFile(name string) (string, error) {
	b, err := flagfile.Read("--token-file", name, maxTokenFile)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newServer builds the server over locations, judging errors as the
// commands do.
func (o *serveOptions) newServer(ctx context.Context, e *env, locations []string) (*serve.Server, error) {
	opts, err := o.source.openOptions()
	if err != nil {
		return nil, err
	}
	// What the state browser shows is checked block by block as it is
	// read, as dump checks it.
	opts.ChecksumReads = true
	return serve.New(ctx, serve.Config{
		Registry: e.reg, Locations: locations, Open: opts, Token: o.token.value,
		Classify: func(err error) (int, string) { return exitCode(err), message(err) },
		Limits:   o.limits, Now: o.now,
	}), nil
}

func (o *serveOptions) run(c *cobra.Command, e *env, locations []string) error {
	ctx := c.Context()
	srv, err := o.newServer(ctx, e, locations)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	defer shareHeapLimit(serveMemoryLimit)()
	if err := o.announce(c.OutOrStdout(), srv, len(locations), "http://"+ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	// Stopping is what a server is asked to do: exit code 0.
	return srv.Serve(ctx, ln)
}

// announce prints where the server listens and, with a token, the login
// address. A server nobody can find is no use, so failing to print it
// stops serve; a reader that stopped after the first line does not.
func (o *serveOptions) announce(w io.Writer, srv *serve.Server, snapshots int, base string) error {
	lines := []string{fmt.Sprintf("serving %d snapshot(s) at %s", snapshots, base)}
	if o.generated {
		lines = append(lines, "token (made up at start): "+o.token.value)
	}
	if o.token.value != "" {
		login, err := srv.OneTimeURL(base)
		if err != nil {
			return err
		}
		lines = append(lines, "open this once to log in a browser: "+login)
	}
	for _, line := range lines {
		if _, err := fmt.Fprintln(w, line); err != nil && !errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	return nil
}
