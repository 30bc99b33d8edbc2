// handlers.go: projections and reactors in `streamseal status`: how far each has applied, whether
// it has caught up with the feed, the streams waiting on a failure (retried with backoff) and
// the coverage audit's findings.

package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// PrintHandlers prints the registered handlers as a table, then one alarm line per handler with
// failing streams or coverage findings.
func PrintHandlers(out io.Writer, handlers []store.HandlerState) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HANDLER\tKIND\tTYPES\tAPPLIED\tCAUGHT UP\tFAILING STREAMS\tCOVERAGE FINDINGS")
	for _, h := range handlers {
		caught := "catching up"
		if h.CaughtUpAt != nil {
			caught = h.CaughtUpAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%d\n", h.Name, h.Kind, strings.Join(h.Types, ","), h.Applied, caught,
			h.FailingStreams, h.Findings)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, h := range handlers {
		if h.FailingStreams > 0 {
			fmt.Fprintf(out, "handler %s: %d streams wait on a failing event since %s (retried with backoff; nothing is skipped): %s\n",
				h.Name, h.FailingStreams, h.OldestFailure.UTC().Format(time.RFC3339), h.LastError)
		}
		if h.RunError != "" {
			fmt.Fprintf(out, "handler %s cannot run: %s\n", h.Name, h.RunError)
		}
		if h.HeldOutOfOrder > 0 {
			fmt.Fprintf(out, "projection %s: %d events held out of order (they landed below versions of their streams it had applied); the coverage audit rebuilds those streams in version order (streamseal audit --local runs it now)\n",
				h.Name, h.HeldOutOfOrder)
		}
		if h.Findings > 0 {
			fmt.Fprintf(out, "projection %s: %d coverage findings (streamseal audit --local lists them)\n", h.Name, h.Findings)
		}
	}
	return nil
}
