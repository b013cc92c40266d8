package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/serve"
	"github.com/dsh-project/dsh/internal/subagent"
)

func newServeCmd(a *app) *cobra.Command {
	var listen, token string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the catalog read-only: a JSON API, pages and live updates",
		Long: `Serve the database (or a --source corpus) over HTTP, read-only, until
SIGINT or SIGTERM (then exit 0):

  /                      root sessions, with a filter box
  /sessions/ID           a session: header, log summary, findings, last
                         events, its own and its subtree's token usage, and
                         its descendants as a tree (state, mode, label,
                         children, tokens, the holder of each running child)
  /diagnose              the catalog audit's summary and findings
  /search?q=             the hits of a search, each linking to its session
                         (every page has a search box)
  /api/v1/sessions       root sessions (session ls -o json objects), paged
  /api/v1/sessions/ID    as session show -o json
  /api/v1/sessions/ID/children?scope=&state=&mode=
                         as list -o json, paged
  /api/v1/sessions/ID/usage
                         as usage ID -o json
  /api/v1/usage?parent=ID&scope=&by=  (or ?id=ID repeated)
                         as usage --parent ID -o json (usage ID... -o
                         json), paged
  /api/v1/search?q=&parent=ID&scope=&type=&since=&until=&n=
                         as search Q -o json, paged
  /api/v1/diagnose?parent=ID&scope=
                         as diagnose -o json
  /api/v1/leases?parent=ID
                         as lease ls -o json
  /api/v1/version        as version -o json
  /api/v1/events?view=   the pages' live updates (Server-Sent Events)

Paged answers take ?limit= (at most 5000; pages 2000) and give the next
page's address in a Link header (rel="next") and X-Next-Cursor. Errors are
the CLI's JSON error document with its code, and an HTTP status.

The pages update live as the store changes (any process's writes, and
leases running out), from one watcher per server. They work without
JavaScript, except for the live updates.

Security: --listen defaults to 127.0.0.1:7420, the loopback interface
only, and then answers only requests addressed to localhost. Any other
address needs --token (or DSH_TOKEN), which every request must carry:
Authorization: Bearer TOKEN, or in a browser ?token=TOKEN once (it becomes
a cookie). Every stored string is escaped in the pages; the Content-
Security-Policy allows no inline script. The corpus is opened read-only and
never written. See docs/serve.md.

` + exitStatusHelp(),
		Example: `  dsh demo && dsh serve
  dsh serve --listen 127.0.0.1:8080 --dsh-compat 0.1.7
  DSH_TOKEN=$(openssl rand -hex 16) dsh serve --listen 0.0.0.0:7420`,
		Args: exactArgs(),
	}
	cmd.Flags().StringVar(&listen, "listen", serve.DefaultListen, "the `ADDRESS` to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().StringVar(&token, "token", "", "require this `TOKEN` on every request (env DSH_TOKEN); needed for any address but loopback")
	src := addSourceFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("token") {
			token = os.Getenv("DSH_TOKEN")
		} else if token == "" {
			return dsherr.New(dsherr.Usage, "--token: empty token")
		}
		needs, err := serve.NeedsToken(listen)
		if err != nil {
			return &dsherr.Error{Code: dsherr.Usage, Msg: err.Error(), Err: err}
		}
		if needs && token == "" {
			return dsherr.New(dsherr.Usage, "--listen %s is reachable from other machines: give --token (or DSH_TOKEN), or listen on 127.0.0.1", listen)
		}
		return runServe(cmd.Context(), a, src, listen, token)
	}
	return cmd
}

// runServe opens the corpus read-only and serves it until ctx ends.
func runServe(ctx context.Context, a *app, src *sourceFlags, listen, token string) (err error) {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	profile, err := a.profile()
	if err != nil {
		return err
	}
	r, err := src.open(ctx, a, "")
	if err != nil {
		return err
	}
	defer closeCorpus(r, &err)
	where := r.Spec.String()
	s, err := serve.New(serve.Corpus{
		Reader:      r.Reader,
		Lister:      func() *subagent.Lister { return r.Lister(cfg.ColdConcurrency) },
		View:        r.View,
		LookupError: r.LookupError,
	}, serve.Config{Token: token, Profile: profile, Where: where, Warn: a.warn})
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return dsherr.Wrap(dsherr.Usage, err, "--listen %s", listen)
	}
	p, err := a.printer(render.Table)
	if err != nil {
		ln.Close()
		return err
	}
	// The address first and alone on stdout: with port 0 it is the only
	// way to learn the port.
	if err := p.Line("http://" + ln.Addr().String() + "/"); err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintf(a.stderr, "dsh: serving %s read-only; Ctrl-C stops\n", render.Escape(where))
	err = s.Run(ctx, ln)
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		// SIGINT and SIGTERM are how a server is stopped: success.
		return nil
	}
	return err
}
