package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStateDir(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	abs := filepath.Join(t.TempDir(), "state")
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
		err  error
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": abs, "HOME": home}, filepath.Join(abs, "switchboard"), nil},
		{"relative xdg is ignored", map[string]string{"XDG_STATE_HOME": "rel", "HOME": home}, filepath.Join(home, ".local", "state", "switchboard"), nil},
		{"userprofile", map[string]string{"USERPROFILE": home}, filepath.Join(home, ".local", "state", "switchboard"), nil},
		{"nothing", map[string]string{}, "", ErrNoHome},
	} {
		got, err := StateDir(env(tc.vars))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: StateDir = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "f.json")
	if err := Replace(path, []byte("one"), nil); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %#o, want 0600", info.Mode().Perm())
	}

	errInjected := errors.New("injected")
	var tmp string
	err = Replace(path, []byte("two"), func(name string) error {
		tmp = name
		return errInjected
	})
	if !errors.Is(err, errInjected) {
		t.Errorf("Replace = %v, want %v", err, errInjected)
	}
	if filepath.Dir(tmp) != dir {
		t.Errorf("temporary file %q is not beside %q", tmp, path)
	}
	if got, _ := os.ReadFile(path); string(got) != "one" {
		t.Errorf("after a failed Replace, the file holds %q, want %q", got, "one")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the file alone", len(entries))
	}
}
