// help.go: the two renderings of the option table people read, the -h text of a command's flags
// and the README's configuration table.

package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// PrintFlags writes the -h text of fs's flags: each flag, its placeholder and its usage, as
// RegisterFlags set it from the table.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		placeholder := "value"
		if t, ok := f.Value.(interface{ Type() string }); ok {
			placeholder = t.Type()
		}
		if placeholder != "" {
			placeholder = " " + placeholder
		}
		fmt.Fprintf(w, "  --%s%s\n        %s\n", f.Name, placeholder, f.Usage)
	})
}

// ReadmeTable is the README's configuration table: one row per option, with its flag, its
// environment variable, its default, the commands that take it and what it does.
func ReadmeTable() string {
	var b strings.Builder
	b.WriteString("| flag | env | default | commands | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, o := range Definitions() {
		env := ""
		if o.Env != "" {
			env = "`" + o.Env + "`"
		}
		def := "none"
		switch {
		case o.Default() != "":
			def = "`" + o.Default() + "`"
		case o.Unset != "":
			def = o.Unset
		}
		var commands []string
		for _, c := range o.Commands {
			if o.RequiredBy(c) {
				commands = append(commands, "`"+c+"` (required)")
			} else {
				commands = append(commands, "`"+c+"`")
			}
		}
		meaning := markdown(o.Help)
		if a := o.Accepted(); a != "" {
			meaning += " (`" + a + "`)"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", o.Flag, env, def, strings.Join(commands, ", "), meaning)
	}
	return b.String()
}

// markdown escapes what would end a table cell.
func markdown(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
