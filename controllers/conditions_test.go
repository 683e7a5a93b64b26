package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
)

func TestConditions(t *testing.T) {
	ok := deploymentState{desired: 2, ready: 2, updated: 2, rolledOut: true}
	for _, tc := range []struct {
		name                         string
		api, browser                 deploymentState
		missing                      []string
		ready, progressing, degraded string // reasons
	}{
		{"all good", ok, ok, nil, shutterv1.ReasonAvailable, shutterv1.ReasonRolledOut, shutterv1.ReasonAsExpected},
		{"no api", deploymentState{desired: 2}, ok, nil, shutterv1.ReasonAPIUnavailable, shutterv1.ReasonRollingOut, shutterv1.ReasonReplicasMissing},
		{"no browsers", ok, deploymentState{desired: 2}, nil, shutterv1.ReasonBrowsersUnavailable, shutterv1.ReasonRollingOut, shutterv1.ReasonReplicasMissing},
		{"partial", deploymentState{desired: 3, ready: 1, rolledOut: true}, ok, nil, shutterv1.ReasonAvailable, shutterv1.ReasonRolledOut, shutterv1.ReasonReplicasMissing},
		{"secret missing", ok, ok, []string{"db/url"}, shutterv1.ReasonAvailable, shutterv1.ReasonRolledOut, shutterv1.ReasonSecretMissing},
		{"scaled to zero", deploymentState{rolledOut: true}, ok, nil, shutterv1.ReasonAPIUnavailable, shutterv1.ReasonRolledOut, shutterv1.ReasonAsExpected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]metav1.Condition{}
			for _, c := range Conditions(7, tc.api, tc.browser, tc.missing) {
				got[c.Type] = c
				if c.ObservedGeneration != 7 || c.Message == "" {
					t.Errorf("%s: %+v", c.Type, c)
				}
			}
			if got[shutterv1.ConditionReady].Reason != tc.ready || got[shutterv1.ConditionProgressing].Reason != tc.progressing ||
				got[shutterv1.ConditionDegraded].Reason != tc.degraded {
				t.Errorf("conditions = %+v", got)
			}
			if (got[shutterv1.ConditionReady].Status == metav1.ConditionTrue) != (tc.ready == shutterv1.ReasonAvailable) {
				t.Errorf("ready status %s for reason %s", got[shutterv1.ConditionReady].Status, tc.ready)
			}
		})
	}
}
