package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// serverCPU reads the CPU time the PostgreSQL server has used, all its processes together
// (backends, autovacuum, WAL writer, and children that have exited, which the postmaster has
// reaped into its own children's time). On a machine shared with other work, wall-clock ratios
// swing with the neighbours; a ratio of server CPU spent on the same work does not. It works
// only when the server runs on this machine (the scratch cluster bench starts by default);
// otherwise Available is false and the figures are omitted.
type serverCPU struct {
	postmaster int
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux that matters
// (ratios do not depend on it).
const clockTick = 10 * time.Millisecond

func newServerCPU(ctx context.Context, pool *pgxpool.Pool) serverCPU {
	var backend int
	if err := pool.QueryRow(ctx, `select pg_backend_pid()`).Scan(&backend); err != nil {
		return serverCPU{}
	}
	fields, err := procStat(backend)
	if err != nil {
		return serverCPU{}
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return serverCPU{}
	}
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid)); err != nil || !strings.Contains(string(cmd), "postgres") {
		return serverCPU{}
	}
	return serverCPU{postmaster: ppid}
}

// Available says whether the server's CPU can be read from here.
func (s serverCPU) Available() bool { return s.postmaster != 0 }

// Now returns the server's CPU time so far (0 when not Available).
func (s serverCPU) Now() time.Duration {
	if !s.Available() {
		return 0
	}
	var ticks int64
	if fields, err := procStat(s.postmaster); err == nil {
		ticks += statTicks(fields, 11, 12, 13, 14) // utime stime cutime cstime
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := procStat(pid)
		if err != nil || fields[1] != strconv.Itoa(s.postmaster) {
			continue
		}
		ticks += statTicks(fields, 11, 12) // utime stime
	}
	return time.Duration(ticks) * clockTick
}

// procStat returns /proc/<pid>/stat's fields after the command name: [0] is the state, [1] the
// parent pid, [11] utime, [12] stime, [13] cutime, [14] cstime (proc(5) fields 3, 4, 14-17).
func procStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(raw)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return nil, fmt.Errorf("stat of %d: no command name", pid)
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 15 {
		return nil, fmt.Errorf("stat of %d: %d fields", pid, len(fields))
	}
	return fields, nil
}

func statTicks(fields []string, at ...int) int64 {
	var sum int64
	for _, i := range at {
		n, _ := strconv.ParseInt(fields[i], 10, 64)
		sum += n
	}
	return sum
}

// databaseCPU reads the CPU time of the backends connected to one database (those alive when it
// is read: a pool's connections, which live through a benchmark's window), so a benchmark with
// two services on one server tells which side spent it. Like serverCPU it works only when the
// server runs on this machine; otherwise it reads 0.
type databaseCPU struct {
	name       string // the database, as backends' process titles show it
	postmaster int
}

func newDatabaseCPU(ctx context.Context, pool *pgxpool.Pool) databaseCPU {
	server := newServerCPU(ctx, pool)
	var name string
	if !server.Available() || pool.QueryRow(ctx, `select current_database()`).Scan(&name) != nil {
		return databaseCPU{}
	}
	return databaseCPU{name: name, postmaster: server.postmaster}
}

// Now returns the CPU time the database's live backends have used so far.
func (d databaseCPU) Now() time.Duration {
	if d.postmaster == 0 {
		return 0
	}
	var ticks int64
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := procStat(pid)
		if err != nil || fields[1] != strconv.Itoa(d.postmaster) {
			continue
		}
		// A backend's title: "postgres: <user> <database> <client> <state>".
		title, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		words := strings.Fields(strings.ReplaceAll(string(title), "\x00", " "))
		if len(words) >= 3 && words[0] == "postgres:" && words[2] == d.name {
			ticks += statTicks(fields, 11, 12)
		}
	}
	return time.Duration(ticks) * clockTick
}

// processCPU returns this process's CPU time so far (its Go side: services, embedded NATS).
func processCPU() time.Duration {
	fields, err := procStat(os.Getpid())
	if err != nil {
		return 0
	}
	return time.Duration(statTicks(fields, 11, 12)) * clockTick
}
