// Package progress prints the progress of long operator work (`streamseal repair`, `streamseal
// audit --full`): done/total with the percentage and the rate since the start, rewritten in place
// on a terminal and as plain lines otherwise (a log file or CI keeps every step).
package progress

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Line is one piece of work's progress line.
type Line struct {
	Out      io.Writer
	Terminal bool   // rewrite the line in place
	Label    string // "repair", "audit orders"
	Unit     string // "events"

	start time.Time
	open  bool // a rewritten line is on screen without its newline
	last  int64
}

// Report shows done of total; it prints only when done changed, so a poll loop may call it often.
func (l *Line) Report(done, total int64) {
	if l.start.IsZero() {
		l.start, l.last = time.Now(), -1
	}
	if done == l.last {
		return
	}
	l.last = done
	rate := float64(done) / max(time.Since(l.start).Seconds(), 0.001)
	text := fmt.Sprintf("%s: %d/%d %s (%.0f%%), %.0f %s/s", l.Label, done, total, l.Unit,
		100*float64(done)/float64(max(total, 1)), rate, l.Unit)
	if l.Terminal {
		fmt.Fprintf(l.Out, "\r%s", text)
		l.open = true
		return
	}
	fmt.Fprintln(l.Out, text)
}

// End ends a line rewritten in place, so the next output starts on its own line.
func (l *Line) End() {
	if l.open {
		fmt.Fprintln(l.Out)
		l.open = false
	}
}

// Finish ends the line and prints a closing line.
func (l *Line) Finish(text string) {
	l.End()
	fmt.Fprintln(l.Out, text)
}

// IsTerminal reports whether f is a character device (an interactive terminal).
func IsTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
