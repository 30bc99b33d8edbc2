// Package sql embeds streamseal's SQL: the numbered tern migrations (tables, indexes, data) and
// the code package of functions and triggers that every migrate re-installs. The files are the
// engine; Go only ships them to the database.
package sql

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql
var migrations embed.FS

//go:embed functions/*.sql
var functions embed.FS

// Migrations returns the numbered migrations, at the root of the returned file system.
func Migrations() fs.FS { return sub(migrations, "migrations") }

// Functions returns the code package (install.sql and the files it includes), at its root.
func Functions() fs.FS { return sub(functions, "functions") }

func sub(fsys embed.FS, dir string) fs.FS {
	out, err := fs.Sub(fsys, dir)
	if err != nil {
		panic("embedded directory " + dir + " is missing: " + err.Error()) // impossible: fixed at build time
	}
	return out
}
