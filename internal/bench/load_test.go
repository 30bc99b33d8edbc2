package bench_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/internal/bench"
)

// Issue 20 (figures that travel): a benchmark's busy flag derives from the load average it read
// at its start, against BusyLoadPerCore per core; the figures it prints say so, and a load that
// cannot be read is never reported as idle.
func TestLoadWatch_BusyDerivesFromTheLoadFigure(t *testing.T) {
	t.Parallel()
	reader := func(loads ...float64) bench.LoadReader {
		return func() (float64, error) {
			l := loads[0]
			if len(loads) > 1 {
				loads = loads[1:]
			}
			return l, nil
		}
	}
	for _, tc := range []struct {
		name      string
		read      bench.LoadReader
		cores     int
		busy      int
		warnStart bool
	}{
		{"IdleMachineIsNotBusy", reader(0.2, 1.9), 2, 0, false},
		{"JustAtTheThresholdIsNotBusy", reader(1.0, 1.0), 2, 0, false},
		{"AboveHalfACorePerCoreIsBusy", reader(1.2, 0.1), 2, 1, true},
		{"ThresholdScalesWithCores", reader(1.2, 0.1), 4, 0, false},
		{"UnreadableLoadIsBusy", func() (float64, error) { return 0, errors.New("no /proc") }, 2, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bench.NewLoadWatch(&out, tc.read, tc.cores)
			started := out.String()
			if got := w.End(); got != tc.busy {
				t.Errorf("busy = %d, want %d\n%s", got, tc.busy, out.String())
			}
			if !strings.Contains(started, "load average at start") {
				t.Errorf("the start figure is not printed at the start:\n%s", started)
			}
			if !strings.Contains(out.String(), "load average at end") {
				t.Errorf("the end figure is not printed:\n%s", out.String())
			}
			if got := strings.Contains(started, "WARNING"); got != tc.warnStart {
				t.Errorf("warning at start = %v, want %v:\n%s", got, tc.warnStart, started)
			}
		})
	}
}

// The default reader reads this machine's figure (Linux: /proc/loadavg).
func TestProcLoadAverage_ReadsTheOneMinuteFigure(t *testing.T) {
	t.Parallel()
	l, err := bench.ProcLoadAverage()
	if err != nil {
		t.Fatal(err)
	}
	if l < 0 {
		t.Fatalf("load average %v is negative", l)
	}
}
