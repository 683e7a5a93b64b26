package main

import "testing"

// TestLeaderElectionDefault: on in a cluster, off on a workstation (where
// it used to fail with "unable to find leader election namespace"), and
// LEADER_ELECT wins either way.
func TestLeaderElectionDefault(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		podFile bool
		want    bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, true, true},
		{map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, false, false},
		{map[string]string{"LEADER_ELECT": "true"}, false, true},
		{map[string]string{"LEADER_ELECT": "false", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}, true, false},
	} {
		got := defaultLeaderElect(func(k string) string { return tc.env[k] }, func(string) bool { return tc.podFile })
		if got != tc.want {
			t.Errorf("%v, pod namespace file %v: %v, want %v", tc.env, tc.podFile, got, tc.want)
		}
	}
}
