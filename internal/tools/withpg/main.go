// Command withpg runs a command against a fresh, fully migrated streamseal database: it starts
// a throwaway PostgreSQL cluster (or uses STREAMSEAL_TEST_DATABASE_URL's server), clones the
// migrated template, installs pgTAP and the streamseal_test fixtures into that database only,
// exports PGHOST/PGPORT/PGUSER/PGDATABASE (and DATABASE_URL), runs the command, and removes the
// cluster. `make sqltest` runs pg_prove through it.
//
//	go run ./internal/tools/withpg [-fixtures DIR] -- pg_prove -r tests/sqltests
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/internal/dbtest"
)

func main() {
	os.Exit(run())
}

func run() int {
	fixtures := flag.String("fixtures", "tests/sqltests/fixtures", "directory of .sql files installed into the test database before the command runs")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withpg [-fixtures DIR] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	ctx := context.Background()
	server, err := dbtest.StartServer(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	defer func() {
		if c := server.Cluster(); c != nil {
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "withpg: stop cluster:", err)
			}
		}
	}()
	databaseURL, err := server.NewDatabase(ctx, "streamseal_sqltest")
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	if err := installFixtures(ctx, databaseURL, *fixtures); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	cmd := exec.CommandContext(ctx, flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), libpqEnv(databaseURL)...)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case errors.Is(err, exec.ErrNotFound):
		fmt.Fprintf(os.Stderr, "withpg: %s not found", flag.Arg(0))
		if flag.Arg(0) == "pg_prove" {
			fmt.Fprint(os.Stderr, ": install pgTAP and pg_prove (Debian: apt-get install postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl)")
		}
		fmt.Fprintln(os.Stderr)
		return 1
	case err != nil:
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	if err := server.DropDatabase(ctx, databaseURL); err != nil {
		fmt.Fprintln(os.Stderr, "withpg: drop database:", err)
	}
	return 0
}

// installFixtures creates pgTAP and runs every .sql file of dir, in name order.
func installFixtures(ctx context.Context, databaseURL, dir string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create extension if not exists pgtap"); err != nil {
		return fmt.Errorf("create extension pgtap (Debian: apt-get install postgresql-15-pgtap): %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			return fmt.Errorf("install fixture %s: %w", f, err)
		}
	}
	return nil
}

// libpqEnv turns a URL into the PG* variables psql-based tools read.
func libpqEnv(databaseURL string) []string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return nil
	}
	env := []string{"DATABASE_URL=" + databaseURL, "PGDATABASE=" + u.Path[1:]}
	q := u.Query()
	host := q.Get("host")
	if host == "" {
		host = u.Hostname()
	}
	if host != "" {
		env = append(env, "PGHOST="+host)
	}
	if p := u.Port(); p != "" {
		env = append(env, "PGPORT="+p)
	} else if p := q.Get("port"); p != "" {
		env = append(env, "PGPORT="+p)
	}
	user := q.Get("user")
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	if user != "" {
		env = append(env, "PGUSER="+user)
	}
	if pw, ok := u.User.Password(); ok {
		env = append(env, "PGPASSWORD="+pw)
	}
	return env
}
