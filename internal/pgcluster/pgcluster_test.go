package pgcluster

import (
	"errors"
	"strings"
	"testing"
)

func TestFindBinDir(t *testing.T) {
	t.Parallel()

	t.Run("MissingBinariesNameWhatToInstall", func(t *testing.T) {
		t.Parallel()
		_, err := findBinDir([]string{t.TempDir(), "/nonexistent/bin"})
		if !errors.Is(err, ErrNoServerBinaries) {
			t.Fatalf("got %v, want ErrNoServerBinaries", err)
		}
		if !strings.Contains(err.Error(), "apt-get install postgresql-15") {
			t.Fatalf("error %q does not say what to install", err)
		}
	})

	t.Run("ReadsTheMajorVersion", func(t *testing.T) {
		t.Parallel()
		for line, want := range map[string]bool{
			"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)": true,
			"postgres (PostgreSQL) 14.2":                           true,
			"postgres (PostgreSQL) 13.9":                           false,
			"garbage":                                              false,
		} {
			if got := versionAtLeast(line, 14); got != want {
				t.Errorf("versionAtLeast(%q, 14) = %v, want %v", line, got, want)
			}
		}
	})
}
