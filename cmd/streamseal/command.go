package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/progress"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// spec describes a command to its -h and to streamseal's usage.
type spec struct {
	name    string
	args    string // positional arguments in the synopsis ("<write|epochs|…>"); "" for none
	summary string // one line in streamseal's usage
	about   string // more for the command's -h; "" for none
}

// invocation is one command line to execute.
type invocation struct {
	spec
	args           []string
	stdout, stderr io.Writer
	logger         *slog.Logger
}

// commandOpts are a command's options: the config.Options its flags and environment set, and
// Validate, which returns one error per flag that is missing or wrong (config's checks of each
// option, then the command's own across options).
type commandOpts interface {
	options() *config.Options
	Validate() error
}

// extraFlagsOpts are options that add flags the option table does not define: run's
// fault-injection flags, which exist only in a build tagged chaos (fault_chaos.go).
type extraFlagsOpts interface {
	commandOpts
	registerExtraFlags(fs *flag.FlagSet)
}

// positionalOpts are options that take positional arguments (bench's benchmark name); any other
// command refuses them.
type positionalOpts interface {
	commandOpts
	setArgs(args []string) error
}

// command is one command: it embeds commandBase and runs with validated options, as River's
// rivercli commands do.
type command[O commandOpts] interface {
	base() *commandBase
	Run(ctx context.Context, opts O) error
}

// commandBase is what every command shares, as River's rivercli.CommandBase: its logger and
// output, and what it opened, each once: this service's database and name, and NATS. Whatever
// it opened is closed, in reverse order, after Run returns.
type commandBase struct {
	Logger   *slog.Logger
	Out      io.Writer
	Terminal bool // Out is a terminal: progress lines rewrite in place

	Pool    *pgxpool.Pool // openDatabase
	Service string        // readService
	NC      *nats.Conn    // connectNATS

	closers []func()
}

func (b *commandBase) base() *commandBase { return b }

// openDatabase opens this service's database (a pool whose connections know streamseal's row
// types) and refuses one that was never migrated, saying what to run.
func (b *commandBase) openDatabase(ctx context.Context, databaseURL string) error {
	if err := b.openPool(ctx, databaseURL); err != nil {
		return err
	}
	return store.SchemaMigrated(ctx, b.Pool)
}

// openPool opens this service's database without checking that it was migrated.
func (b *commandBase) openPool(ctx context.Context, databaseURL string) error {
	pool, err := store.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	b.Pool = pool
	b.onClose(pool.Close)
	return nil
}

// readService reads this service's name from its database.
func (b *commandBase) readService(ctx context.Context) error {
	name, err := store.ServiceName(ctx, b.Pool)
	if err != nil {
		return err
	}
	b.Service = name
	return nil
}

// connectNATS connects to the NATS server at url as service, with the credentials and TLS o's
// --nats-* options give. A refusal names the options to check.
func (b *commandBase) connectNATS(url, service string, o *config.Options) error {
	nc, err := wire.Connect(url, service, o.NATS, b.Logger)
	if err != nil {
		return natsRefusal(err, o)
	}
	b.NC = nc
	b.onClose(nc.Close)
	return nil
}

// natsRefusal adds to a failed NATS connection which options to check, when the server refused
// the credentials or the TLS handshake failed.
func natsRefusal(err error, o *config.Options) error {
	msg := strings.ToLower(err.Error())
	var hint string
	switch {
	case errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrNkeysNotSupported) ||
		strings.Contains(msg, "authorization violation") || strings.Contains(msg, "authentication") || strings.Contains(msg, "nkeys not supported"):
		hint = "the NATS server refused the credentials: check " + o.NATSAuthFlags()
	case errors.Is(err, nats.ErrSecureConnRequired) || strings.Contains(msg, "secure connection required"):
		hint = "the NATS server requires TLS: set --nats-tls-ca (and --nats-tls-cert/--nats-tls-key if it asks for a client certificate)"
	case errors.Is(err, nats.ErrSecureConnWanted) || strings.Contains(msg, "secure connection not available"):
		hint = "the NATS server does not offer TLS: drop the --nats-tls-* options or point --nats-url at a TLS listener"
	case strings.Contains(msg, "x509") || strings.Contains(msg, "certificate signed by unknown authority"):
		hint = "the NATS server's certificate was not accepted: check --nats-tls-ca and --nats-tls-server-name"
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "certificate required"):
		hint = "the TLS handshake with the NATS server failed: check --nats-tls-cert and --nats-tls-key (the server may require a client certificate)"
	default:
		return err
	}
	return &natsRefusedError{err: err, hint: hint}
}

// natsRefusedError is a connection the NATS server refused: retrying cannot fix it.
type natsRefusedError struct {
	err  error
	hint string
}

func (e *natsRefusedError) Error() string { return e.err.Error() + ": " + e.hint }
func (e *natsRefusedError) Unwrap() error { return e.err }

// onClose runs f after the command, before what was opened earlier is closed.
func (b *commandBase) onClose(f func()) { b.closers = append(b.closers, f) }

func (b *commandBase) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// execute parses inv's flags and environment into opts, validates them, and runs cmd over a
// base that closes what it opened. -h prints the command's help and returns nil; a bad
// invocation returns a *usageError naming every problem.
func execute[O commandOpts](ctx context.Context, inv invocation, cmd command[O], opts O) error {
	fs := flag.NewFlagSet("streamseal "+inv.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // problems are returned, help is printed below
	fs.Usage = func() {}
	o := opts.options()
	*o = config.DefaultOptions()
	envErr := o.RegisterFlags(fs, inv.name)
	if x, ok := any(opts).(extraFlagsOpts); ok {
		x.registerExtraFlags(fs)
	}

	positional, err := parse(fs, inv.args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(inv.stdout, inv.spec, fs)
		return nil
	}
	if err != nil {
		return inv.usageError(err)
	}
	var problems []error
	if envErr != nil {
		problems = append(problems, envErr)
	}
	if p, ok := any(opts).(positionalOpts); ok {
		if err := p.setArgs(positional); err != nil {
			problems = append(problems, err)
		}
	} else if len(positional) > 0 {
		problems = append(problems, fmt.Errorf("unexpected argument %q", positional[0]))
	}
	if err := opts.Validate(); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return inv.usageError(problems...)
	}

	b := cmd.base()
	b.Logger, b.Out = inv.logger, inv.stdout
	if f, ok := inv.stdout.(*os.File); ok {
		b.Terminal = progress.IsTerminal(f)
	}
	defer b.close()
	return cmd.Run(ctx, opts)
}

// parse parses flags and returns the positional arguments, which may stand between flags
// (bench write --quick).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// printHelp writes a command's -h: synopsis, summary, more, and its flags as config renders them.
func printHelp(w io.Writer, s spec, fs *flag.FlagSet) {
	synopsis := "streamseal " + s.name
	if s.args != "" {
		synopsis += " " + s.args
	}
	fmt.Fprintf(w, "usage: %s [flags]\n\n%s\n", synopsis, s.summary)
	if s.about != "" {
		fmt.Fprintf(w, "\n%s", s.about)
	}
	fmt.Fprintln(w, "\nflags (a named environment variable sets a flag too; the flag wins):")
	config.PrintFlags(w, fs)
}

// usageError is a bad invocation: streamseal exits with status 2 and prints each problem on a
// line of its own, then the hint.
type usageError struct {
	command  string  // "" for streamseal itself
	problems []error // each one line, or joined lines (errors.Join)
	hint     string
}

func (inv invocation) usageError(problems ...error) *usageError {
	return &usageError{command: inv.name, problems: problems,
		hint: "Run 'streamseal " + inv.name + " -h' for its flags.\n"}
}

func (e *usageError) Error() string {
	prefix := "streamseal: "
	if e.command != "" {
		prefix = "streamseal " + e.command + ": "
	}
	var lines []string
	for _, p := range e.problems {
		for _, line := range strings.Split(p.Error(), "\n") {
			lines = append(lines, prefix+line)
		}
	}
	return strings.Join(lines, "\n")
}
