package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/serve"
)

type serveOptions struct {
	source sourceFlags
	listen string
	token  string
}

func newServeCommand(e *env) *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:   "serve SNAPSHOT... [--listen 127.0.0.1:8080] [--token TOKEN]",
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
anywhere but to this server.

It listens on loopback only unless --token is given: any other address needs one, which
every request must carry as "Authorization: Bearer TOKEN", or as the cookie that the
one-time URL printed at start sets in a browser.

` + exitCodeHelp,
		Example: `  stateutil serve ./savepoint-1 ./savepoint-2
  stateutil serve ./chk-42 --listen 127.0.0.1:9000
  stateutil serve hdfs://nn:8020/sp/job-7 --listen 0.0.0.0:8080 --token "$(openssl rand -hex 16)"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c, e, args)
		},
		ValidArgsFunction: completeFiles,
	}
	o.source.add(c)
	c.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on, HOST:PORT (port 0: any free one)")
	c.Flags().StringVar(&o.token, "token", "", "require this token of every request (needed to listen on other than loopback)")
	return c
}

func (o *serveOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usageErrorf("--listen %q: want HOST:PORT", o.listen)
	}
	if !serve.IsLoopback(o.listen) && o.token == "" {
		return usageErrorf("--listen %q is not a loopback address: give --token to serve it there", o.listen)
	}
	_, err := o.source.openOptions()
	return err
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
		Registry: e.reg, Locations: locations, Open: opts, Token: o.token,
		Classify: func(err error) (int, string) { return exitCode(err), message(err) },
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
	base := "http://" + ln.Addr().String()
	if err := o.announce(c.OutOrStdout(), srv, len(locations), base); err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		// Stopping is what a server is asked to do: exit code 0.
		if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
}

// announce prints where the server listens and, with a token, the login
// address. A server nobody can find is no use, so failing to print it
// stops serve; a reader that stopped after the first line does not.
func (o *serveOptions) announce(w io.Writer, srv *serve.Server, snapshots int, base string) error {
	lines := []string{fmt.Sprintf("serving %d snapshot(s) at %s", snapshots, base)}
	if o.token != "" {
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
