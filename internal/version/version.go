// Package version is the application version: stamped at build time with
// -ldflags "-X github.com/shutterhq/shutter/internal/version.Version=…", else
// taken from Go's build information.
package version

import "runtime/debug"

// Version is set by the linker.
var Version = ""

// String returns the version or commit of this binary.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
	}
	return "dev"
}
