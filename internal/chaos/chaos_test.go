package chaos_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamseal/streamseal/internal/chaos"
	"github.com/streamseal/streamseal/internal/pgcluster"
)

// long runs every case at full size (make chaos); without it the short form runs (make test).
var long = flag.Bool("chaos.long", false, "run every fault case at full size (make chaos)")

// TestFaultSuite runs the fault cases as real processes (chaos.Cases): the short form in
// `make test`, every case at full size with -chaos.long (`make chaos`). Each case prints its
// figures; the table of them ends the run. A failing case keeps its world's directory (every
// process's log) and prints its path; STREAMSEAL_CHAOS_KEEP=1 keeps every case's.
func TestFaultSuite(t *testing.T) {
	if _, err := pgcluster.FindBinDir(); errors.Is(err, pgcluster.ErrNoServerBinaries) {
		t.Skip(err)
	}
	ctx := context.Background()
	binDir := t.TempDir()
	bins, err := chaos.Build(ctx, binDir)
	if err != nil {
		t.Fatal(err)
	}
	size := chaos.Size{Long: *long}
	var mu sync.Mutex
	var figures []chaos.Figures
	t.Cleanup(func() {
		table := chaos.Table(figures)
		fmt.Print(table)
		t.Log("\n" + table)
	})
	for _, c := range chaos.Cases {
		if !c.Short && !size.Long {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			// Invariant 14 (every request reaches an answer) under the fault, with 1-3 and 9.
			if !size.Long {
				// The short form's cases run side by side: most of a case is waiting on its
				// processes. The full form runs them one at a time, so their seconds compare.
				t.Parallel()
			}
			f := chaos.Figures{Case: c.Name}
			defer func() {
				mu.Lock()
				figures = append(figures, f)
				mu.Unlock()
			}()
			dir, err := os.MkdirTemp("", "streamseal-chaos-"+c.Name[:1]+"-")
			if err != nil {
				t.Fatal(err)
			}
			logf := func(format string, args ...any) {
				line := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
				appendLine(filepath.Join(dir, "case.log"), line)
				t.Log(line)
			}
			w, err := chaos.NewWorld(ctx, dir, bins, logf)
			if err != nil {
				t.Fatal(err)
			}
			caseCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			runErr := c.Run(caseCtx, w, size, &f)
			w.Close()
			t.Logf("figures: %s", chaos.Table([]chaos.Figures{f}))
			if runErr != nil {
				t.Errorf("%s: %v\nlogs kept:\n  %s", c.Name, runErr, strings.Join(w.LogPaths(), "\n  "))
				return
			}
			if f.Exits > 0 {
				t.Logf("%d run processes exited on their own and were restarted; logs in %s", f.Exits, dir)
			}
			if os.Getenv("STREAMSEAL_CHAOS_KEEP") != "" {
				t.Logf("logs kept (STREAMSEAL_CHAOS_KEEP): %s", dir)
				return
			}
			os.RemoveAll(dir)
		})
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
