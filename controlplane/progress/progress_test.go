package progress

import (
	"strings"
	"testing"
)

// Not a terminal: every change is its own line (a log keeps each step); unchanged counts print
// nothing; Finish closes with its line.
func TestLine_PlainLinesWhenNotATerminal(t *testing.T) {
	var out strings.Builder
	l := &Line{Out: &out, Label: "repair", Unit: "events"}
	l.Report(0, 40)
	l.Report(0, 40)
	l.Report(40, 40)
	l.Finish("repair: complete")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "repair: 0/40 events (0%), ") ||
		!strings.HasPrefix(lines[1], "repair: 40/40 events (100%), ") || lines[2] != "repair: complete" || strings.Contains(out.String(), "\r") {
		t.Fatalf("output %q", out.String())
	}
}

// A terminal: one line rewritten in place, ended before the closing line.
func TestLine_RewritesInPlaceOnATerminal(t *testing.T) {
	var out strings.Builder
	l := &Line{Out: &out, Terminal: true, Label: "audit orders: drill-down", Unit: "events"}
	l.Report(5, 10)
	l.Report(10, 10)
	l.Finish("done")
	got := out.String()
	if strings.Count(got, "\r") != 2 || strings.Count(got, "\n") != 2 || !strings.HasSuffix(got, "\ndone\n") ||
		!strings.Contains(got, "\raudit orders: drill-down: 10/10 events (100%)") {
		t.Fatalf("output %q", got)
	}
}
