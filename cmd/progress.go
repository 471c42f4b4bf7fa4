package cmd

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a byte progress bar on a terminal, else nothing.
type progress struct {
	w     io.Writer
	desc  string
	bar   *progressbar.ProgressBar
	quiet bool
}

// progressHook, when set (tests), is called on every progress step.
var progressHook func()

func (e *env) newProgress(w io.Writer, quiet bool, desc string) *progress {
	return &progress{w: w, desc: desc, quiet: quiet || !e.terminal(w)}
}

func (p *progress) start(total int64) {
	if p.quiet {
		return
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(p.desc),
		progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
}

func (p *progress) add(n int64) {
	if progressHook != nil {
		progressHook()
	}
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
