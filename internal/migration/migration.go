// Package migration reads numbered schema migrations for the stores that
// keep their schema in SQL files (migrations/NNNN_name.sql, embedded): each
// store applies them in order, once each, recording them in its own
// schema_migrations table.
package migration

import (
	"io/fs"
	"sort"
	"strings"
)

// Migration is one numbered schema change.
type Migration struct {
	Version string // the file name without .sql, e.g. 0001_accounts
	SQL     string
}

// Load returns the migrations of fsys's migrations directory, in order.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql"), SQL: string(body)})
	}
	return out, nil
}
