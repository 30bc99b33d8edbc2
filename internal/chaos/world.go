// Package chaos is streamseal's fault suite: real processes, real faults, convergence witnessed
// in the databases. A World is one origin and one or more consumers, each a `streamseal run`
// process built with the chaos tag (whose --fault-drop-first-delivery drops deliveries at the
// inbox's real receive seam), each on its own throwaway PostgreSQL cluster (so each can be
// restarted with an immediate shutdown), all over an external nats-server process built from the
// module proxy. Faults come from outside: kill -9 of a process, an immediate Postgres restart,
// rows deleted in a consumer's database, duplicate and reordered deliveries re-published on the
// events' own subjects. Appends go through the SQL API (streamseal.append).
//
// Every process writes its log to a file in the world's directory, kept (and its path printed)
// when a case fails. Tooling only: nothing in controlplane/ imports it.
package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/pgcluster"
)

// Binaries are the programs a world runs.
type Binaries struct {
	Streamseal string // built with -tags chaos
	NATSServer string // github.com/nats-io/nats-server/v2, the version go.mod pins
}

// Build builds the binaries into dir (the Go build cache makes a second build cheap).
func Build(ctx context.Context, dir string) (Binaries, error) {
	b := Binaries{Streamseal: filepath.Join(dir, "streamseal"), NATSServer: filepath.Join(dir, "nats-server")}
	for _, args := range [][]string{
		{"build", "-tags", "chaos", "-o", b.Streamseal, "github.com/streamseal/streamseal/cmd/streamseal"},
		{"build", "-o", b.NATSServer, "github.com/nats-io/nats-server/v2"},
	} {
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			return Binaries{}, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return b, nil
}

// World is the processes and databases of one case.
type World struct {
	Dir  string // logs (and NATS's store); kept when the case fails
	Bins Binaries
	NATS *Process
	Logf func(format string, args ...any)

	mu       sync.Mutex
	services []*Service
	natsPort int
	natsDir  string
}

// NewWorld makes a world in dir and starts its nats-server.
func NewWorld(ctx context.Context, dir string, bins Binaries, logf func(string, ...any)) (*World, error) {
	w := &World{Dir: dir, Bins: bins, Logf: logf, natsDir: filepath.Join(dir, "nats-store")}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	w.natsPort = port
	w.NATS = &Process{Name: "nats-server", Bin: bins.NATSServer, LogPath: filepath.Join(dir, "nats-server.log"),
		Args: []string{"-js", "-sd", w.natsDir, "-a", "127.0.0.1", "-p", strconv.Itoa(port)}, logf: logf}
	if err := w.NATS.Start(); err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		return nil, fmt.Errorf("nats-server did not listen (log %s): %w", w.NATS.LogPath, err)
	}
	return w, nil
}

// NATSURL is the broker's URL (the same across restarts).
func (w *World) NATSURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", w.natsPort) }

// RestartNATS starts the nats-server again (after Kill9) on the same port and store.
func (w *World) RestartNATS(ctx context.Context) error {
	if err := w.NATS.Start(); err != nil {
		return err
	}
	return waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", w.natsPort))
}

// ServiceSpec is one service to start.
type ServiceSpec struct {
	Name     string
	Consumes []string
	Grants   map[string][]string // grantee → types
	Args     []string            // more run flags (intervals, caps, faults)
	// Replicas is how many `streamseal run` processes share the service's database and NATS
	// identity, as production runs them (README Operations); 0 means 1.
	Replicas int
}

// Service is one service: its cluster, its database, the test's pool on it, its run processes.
type Service struct {
	Name    string
	Cluster *pgcluster.Cluster
	URL     string
	Pool    *pgxpool.Pool // the test's own connections (appends, witnesses)
	Run     *Process      // the first replica (the only one unless the spec asked for more)
	Runs    []*Process    // every replica, each killable and restartable alone
	world   *World
}

// StartService starts a cluster, migrates its database with `streamseal migrate` and starts
// spec.Replicas `streamseal run` processes on it.
func (w *World) StartService(ctx context.Context, spec ServiceSpec) (*Service, error) {
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		return nil, err
	}
	s := &Service{Name: spec.Name, Cluster: cluster, URL: cluster.URL("postgres"), world: w}
	w.mu.Lock()
	w.services = append(w.services, s)
	w.mu.Unlock()
	if out, err := exec.CommandContext(ctx, w.Bins.Streamseal, "migrate", "--database-url", s.URL).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("migrate %s: %w\n%s", spec.Name, err, out)
	}
	if s.Pool, err = pgxpool.New(ctx, s.URL); err != nil {
		return nil, err
	}
	replicas := max(1, spec.Replicas)
	for i := range replicas {
		name := spec.Name
		if replicas > 1 {
			name = ReplicaName(spec.Name, i)
		}
		p := &Process{Name: name, Bin: w.Bins.Streamseal, Args: runArgs(spec, s.replicaURL(i), w.NATSURL()),
			LogPath: filepath.Join(w.Dir, name+".log"), Supervised: true, logf: w.Logf}
		s.Runs = append(s.Runs, p)
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	s.Run = s.Runs[0]
	return s, nil
}

// runArgs are the `streamseal run` arguments of one replica of spec.
func runArgs(spec ServiceSpec, databaseURL, natsURL string) []string {
	args := []string{"run", "--database-url", databaseURL, "--service", spec.Name, "--nats-url", natsURL}
	if len(spec.Consumes) > 0 {
		args = append(args, "--consumes", strings.Join(spec.Consumes, ","))
	}
	for grantee, types := range spec.Grants {
		args = append(args, "--grant-all-tenants", grantee+"="+strings.Join(types, ","))
	}
	return append(args, spec.Args...)
}

// ReplicaName names replica i of a service: its process, its log, and the application_name
// its database sessions carry (how RelayLeader tells the replicas apart from outside).
func ReplicaName(service string, i int) string { return fmt.Sprintf("%s-r%d", service, i) }

// replicaURL is the service's database URL with replica i's application_name: every session
// of that process shows it in pg_stat_activity. The clusters listen on a Unix socket only, so
// no client port could tell two processes' sessions apart.
func (s *Service) replicaURL(i int) string {
	return s.URL + "&application_name=" + url.QueryEscape(ReplicaName(s.Name, i))
}

// Exits counts the times the service's run processes exited on their own.
func (s *Service) Exits() int {
	n := 0
	for _, p := range s.Runs {
		n += p.Exits()
	}
	return n
}

// RelayLeader returns the index of the replica whose relay leads (holds the relay's leader lock,
// store.RelayLeaderSession), and false when no session holds it (between a leader's death and
// the next election) or its holder is not one of this service's replicas.
func (s *Service) RelayLeader(ctx context.Context) (int, bool, error) {
	holder, ok, err := store.RelayLeaderSession(ctx, s.Pool)
	if err != nil || !ok {
		return 0, false, err
	}
	for i := range s.Runs {
		if holder.ApplicationName == ReplicaName(s.Name, i) {
			return i, true, nil
		}
	}
	return 0, false, nil
}

// RestartPostgres restarts the service's cluster with an immediate shutdown.
func (s *Service) RestartPostgres(ctx context.Context) error {
	s.world.Logf("%s: PostgreSQL immediate shutdown and restart", s.Name)
	return s.Cluster.RestartImmediate(ctx)
}

// Exec runs one of the binary's commands against this service and returns its output.
func (s *Service) Exec(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.world.Bins.Streamseal, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Close stops every process and cluster; each cluster's server log is copied into Dir first.
func (w *World) Close() {
	w.mu.Lock()
	services := w.services
	w.mu.Unlock()
	for _, s := range services {
		for _, p := range s.Runs {
			p.Stop()
		}
	}
	for _, s := range services {
		if s.Pool != nil {
			s.Pool.Close()
		}
		if b, err := os.ReadFile(s.Cluster.LogPath()); err == nil {
			_ = os.WriteFile(filepath.Join(w.Dir, s.Name+"-postgres.log"), b, 0o644)
		}
		_ = s.Cluster.Stop()
	}
	w.NATS.Stop()
}

// LogPaths lists every log this world writes.
func (w *World) LogPaths() []string {
	paths := []string{w.NATS.LogPath}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.services {
		for _, p := range s.Runs {
			paths = append(paths, p.LogPath)
		}
		paths = append(paths, filepath.Join(w.Dir, s.Name+"-postgres.log"))
	}
	return paths
}

// Process is one program the world runs, its output appended to LogPath across restarts. A
// supervised process that exits on its own is started again after a second, as a service
// manager would, and counted in Exits: the figures show it.
type Process struct {
	Name       string
	Bin        string
	Args       []string
	LogPath    string
	Supervised bool
	logf       func(string, ...any)

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	killed  bool // by the case (Kill9, Stop): not an exit of its own
	stopped bool
	exits   int
}

// Start starts the program.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *Process) startLocked() error {
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\n===== chaos: %s start %s %s\n", time.Now().Format(time.RFC3339Nano), p.Bin, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, and killed if the test process dies first (no orphan holds a port).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.killed = cmd, false
	done := make(chan struct{})
	p.done = done
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "===== chaos: %s exited %s: %v\n", time.Now().Format(time.RFC3339Nano), p.Name, err)
		log.Close()
		p.mu.Lock()
		own := !p.killed && !p.stopped
		if own {
			p.exits++
		}
		restart := own && p.Supervised
		p.mu.Unlock()
		close(done)
		if own {
			p.logf("%s exited on its own (%v); log %s", p.Name, err, p.LogPath)
		}
		if restart {
			time.Sleep(time.Second)
			p.mu.Lock()
			if !p.stopped && p.cmd == cmd {
				if err := p.startLocked(); err != nil {
					p.logf("%s: restart failed: %v", p.Name, err)
				}
			}
			p.mu.Unlock()
		}
	}()
	return nil
}

// Kill9 kills the program with SIGKILL and waits for it to be gone.
func (p *Process) Kill9() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	p.logf("%s: kill -9 (pid %d)", p.Name, cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop ends the program for good: SIGTERM, then SIGKILL after 10 s.
func (p *Process) Stop() {
	p.mu.Lock()
	p.stopped = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// Exits counts the times the program exited on its own (crashed or failed).
func (p *Process) Exits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exits
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitTCP(ctx context.Context, addr string) error {
	deadline := time.Now().Add(Failsafe)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
