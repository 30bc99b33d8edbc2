// report.go: how an audit reads to an operator (`streamseal audit`): one summary per origin,
// its divergent buckets, the repair requests sent or (report-only) that would be, and the seal;
// and a progress line per origin while its drill-down runs.

package audit

import (
	"fmt"
	"io"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/progress"
)

// WriteFindings writes findings to w, one block per origin, in the order given; mode is the
// repair mode the audit ran in (config.ReportOnly says "would send"). No findings at all is
// written as "no known origin": this service learns origins from their checkpoints.
func WriteFindings(w io.Writer, findings []Finding, mode string) {
	if len(findings) == 0 {
		fmt.Fprintln(w, "audit: no known origin (this service learns origins from their checkpoints)")
		return
	}
	for _, f := range findings {
		writeFinding(w, f, mode)
	}
}

func writeFinding(w io.Writer, f Finding, mode string) {
	if f.Skipped != "" {
		fmt.Fprintf(w, "audit %s: skipped: %s\n", f.Origin, f.Skipped)
		return
	}
	byReason := map[string]int{}
	for _, b := range f.Divergent {
		byReason[b.Reason]++
	}
	fmt.Fprintf(w, "audit %s: window [%d, %d): %d divergent buckets (deficit %d, identity_mismatch %d, local_extra %d)\n",
		f.Origin, f.From, f.To, len(f.Divergent), byReason["deficit"], byReason["identity_mismatch"], byReason["local_extra"])
	for _, b := range f.Divergent {
		fmt.Fprintf(w, "  %-17s %s/%s stream %s: local n=%d, origin n=%d\n", b.Reason, b.Tenant, b.Type, b.Stream, b.LocalN, b.OriginN)
	}
	if len(f.PendingBackfill) > 0 {
		fmt.Fprintf(w, "audit %s: %d buckets pending_backfill (history older than an expansion's birth, its backfill outstanding: expected)\n",
			f.Origin, len(f.PendingBackfill))
	}
	// Never an all-clear over a mismatching digest: each type that still differs is named.
	if len(f.Unresolved) > 0 {
		fmt.Fprintf(w, "audit %s: UNRESOLVED: %d event types still differ from the origin\n", f.Origin, len(f.Unresolved))
	}
	for _, u := range f.Unresolved {
		switch {
		case !u.Drilled:
			fmt.Fprintf(w, "  unresolved %s: not drilled this audit (type cap); its turn comes at a next audit\n", u.Type)
		case u.ResumeAfter != "":
			fmt.Fprintf(w, "  unresolved %s: pages left; the next audit resumes after stream %q\n", u.Type, u.ResumeAfter)
		default:
			fmt.Fprintf(w, "  unresolved %s: every page compared; what differs is above, repairing or in flight\n", u.Type)
		}
	}
	verb := "sent"
	if mode == config.ReportOnly {
		verb = "would send (report-only)"
	}
	fmt.Fprintf(w, "audit %s: repair requests %s: %d\n", f.Origin, verb, f.Requests)
	if f.Sealed {
		fmt.Fprintf(w, "audit %s: window certified; seal now %d\n", f.Origin, f.SealedThrough)
	}
}

// ProgressLines returns report, an Auditor.OnProgress that shows each origin's drill-down on a
// progress line of its own ("audit <origin>: drill-down: done/total events …"), and end, which
// ends the lines so the findings start on their own line.
func ProgressLines(w io.Writer, terminal bool) (report func(Progress), end func()) {
	lines := map[string]*progress.Line{}
	report = func(p Progress) {
		if lines[p.Origin] == nil {
			lines[p.Origin] = &progress.Line{Out: w, Terminal: terminal, Label: "audit " + p.Origin + ": drill-down", Unit: "events"}
		}
		lines[p.Origin].Report(p.Done, p.Total)
	}
	end = func() {
		for _, l := range lines {
			l.End()
		}
	}
	return report, end
}
