package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// BusyLoadPerCore is the 1-minute load average per core above which a benchmark's figures are
// marked busy=1: other work was competing for the machine, so its absolute figures (and, less,
// its ratios) say more about the machine than about streamseal.
const BusyLoadPerCore = 0.5

// LoadReader returns the machine's 1-minute load average.
type LoadReader func() (float64, error)

// ProcLoadAverage reads the 1-minute load average from /proc/loadavg (Linux).
func ProcLoadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("read load average: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, fmt.Errorf("read load average: /proc/loadavg is empty")
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("read load average: %q: %w", fields[0], err)
	}
	return l, nil
}

// LoadWatch prints the machine's load average at a benchmark's start and end, and says whether
// the machine was busy. busy derives from the start figure: it is the minute of other work the
// benchmark walked into. The end figure is printed for the record, but it holds the benchmark's
// own work (its Postgres, NATS and clients keep both cores busy), so on an idle machine it is
// high too and does not mark the run busy. A load that cannot be read is reported as busy:
// nobody can vouch that the machine was idle.
type LoadWatch struct {
	out   io.Writer
	read  LoadReader
	cores int
	busy  bool
}

// watchLoad starts a LoadWatch on this machine's load average and core count.
func watchLoad(out io.Writer) *LoadWatch {
	return NewLoadWatch(out, ProcLoadAverage, runtime.NumCPU())
}

// NewLoadWatch prints the start figure, read by read, on a machine of cores cores (at least 1).
func NewLoadWatch(out io.Writer, read LoadReader, cores int) *LoadWatch {
	w := &LoadWatch{out: out, read: read, cores: max(1, cores)}
	w.busy = w.print("start")
	return w
}

// End prints the end figure and returns the RESULT line's busy flag: 1 when the machine was busy
// at the start (or its load could not be read), else 0.
func (w *LoadWatch) End() int {
	w.print("end")
	if w.busy {
		return 1
	}
	return 0
}

// print prints the figure at moment and reports whether it is above the busy threshold (or
// unknown).
func (w *LoadWatch) print(moment string) bool {
	l, err := w.read()
	if err != nil {
		fmt.Fprintf(w.out, "load average at %s: unknown (%v); WARNING: figures cannot be vouched for as taken on an idle machine (busy=1)\n", moment, err)
		return true
	}
	perCore := l / float64(w.cores)
	fmt.Fprintf(w.out, "load average at %s: %.2f over %d cores (%.2f per core)", moment, l, w.cores, perCore)
	busy := perCore > BusyLoadPerCore
	switch {
	case busy && moment == "start":
		fmt.Fprintf(w.out, "; WARNING: above %.1f per core: the machine is busy with other work, figures are marked busy=1", BusyLoadPerCore)
	case busy:
		fmt.Fprint(w.out, "; includes this benchmark's own work")
	}
	fmt.Fprintln(w.out)
	return busy
}
