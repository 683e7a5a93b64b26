package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
)

// deploymentState is what the status needs of a Deployment.
type deploymentState struct {
	desired, observed, ready, updated int32
	rolledOut                         bool
}

func (r *Reconciler) observe(ctx context.Context, ns, name string) (deploymentState, error) {
	var d appsv1.Deployment
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return deploymentState{}, nil
		}
		return deploymentState{}, err
	}
	st := deploymentState{desired: ptr.Deref(d.Spec.Replicas, 1), observed: d.Status.Replicas, ready: d.Status.ReadyReplicas,
		updated: d.Status.UpdatedReplicas}
	st.rolledOut = d.Status.ObservedGeneration >= d.Generation && st.updated >= st.desired &&
		d.Status.Replicas == st.updated && d.Status.AvailableReplicas >= st.desired
	return st, nil
}

// Conditions computes the conditions from the observed state. It is pure,
// so that every branch is tested without a cluster.
func Conditions(generation int64, api, browser deploymentState, missing []string) []metav1.Condition {
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation}
	}
	var out []metav1.Condition
	switch {
	case api.ready == 0 && api.desired > 0:
		out = append(out, cond(shutterv1.ConditionReady, false, shutterv1.ReasonAPIUnavailable, "no API pod is ready"))
	case browser.ready == 0 && browser.desired > 0:
		out = append(out, cond(shutterv1.ConditionReady, false, shutterv1.ReasonBrowsersUnavailable, "no browser pod is ready"))
	case api.desired == 0:
		out = append(out, cond(shutterv1.ConditionReady, false, shutterv1.ReasonAPIUnavailable, "scaled to zero API pods"))
	default:
		out = append(out, cond(shutterv1.ConditionReady, true, shutterv1.ReasonAvailable,
			fmt.Sprintf("%d API and %d browser pods ready", api.ready, browser.ready)))
	}
	if api.rolledOut && browser.rolledOut {
		out = append(out, cond(shutterv1.ConditionProgressing, false, shutterv1.ReasonRolledOut, "every pod runs the current spec"))
	} else {
		out = append(out, cond(shutterv1.ConditionProgressing, true, shutterv1.ReasonRollingOut, "pods are being replaced or started"))
	}
	switch {
	case len(missing) > 0:
		out = append(out, cond(shutterv1.ConditionDegraded, true, shutterv1.ReasonSecretMissing,
			"referenced Secret keys are missing: "+strings.Join(missing, ", ")))
	case api.ready < api.desired || browser.ready < browser.desired:
		out = append(out, cond(shutterv1.ConditionDegraded, true, shutterv1.ReasonReplicasMissing,
			fmt.Sprintf("ready: %d of %d API pods, %d of %d browser pods", api.ready, api.desired, browser.ready, browser.desired)))
	default:
		out = append(out, cond(shutterv1.ConditionDegraded, false, shutterv1.ReasonAsExpected, "all pods ready"))
	}
	return out
}

// updateStatus writes the status when it changed, and records an event when
// readiness changes.
func (r *Reconciler) updateStatus(ctx context.Context, s *shutterv1.ScreenshotService, before *shutterv1.ScreenshotServiceStatus, missing []string) error {
	api, err := r.observe(ctx, s.Namespace, manifests.APIName(s))
	if err != nil {
		return err
	}
	browser, err := r.observe(ctx, s.Namespace, manifests.BrowserName(s))
	if err != nil {
		return err
	}
	s.Status.ObservedGeneration = s.Generation
	s.Status.Replicas = api.observed
	s.Status.DesiredReplicas = api.desired
	s.Status.ReadyReplicas = api.ready
	s.Status.BrowserReadyReplicas = browser.ready
	s.Status.Selector = manifests.Selector(s)
	s.Status.URL = manifests.URL(s)
	s.Status.ClusterURL = manifests.ClusterURL(s)
	for _, c := range Conditions(s.Generation, api, browser, missing) {
		meta.SetStatusCondition(&s.Status.Conditions, c)
	}
	return r.writeStatus(ctx, s, before)
}

func (r *Reconciler) writeStatus(ctx context.Context, s *shutterv1.ScreenshotService, before *shutterv1.ScreenshotServiceStatus) error {
	if equality.Semantic.DeepEqual(before, &s.Status) {
		return nil
	}
	wasReady := meta.IsStatusConditionTrue(before.Conditions, shutterv1.ConditionReady)
	if isReady := meta.IsStatusConditionTrue(s.Status.Conditions, shutterv1.ConditionReady); isReady != wasReady {
		c := meta.FindStatusCondition(s.Status.Conditions, shutterv1.ConditionReady)
		kind := corev1.EventTypeNormal
		if !isReady {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(s, nil, kind, c.Reason, "Reconcile", "%s", c.Message)
	}
	return r.Status().Update(ctx, s)
}

// failed records a reconcile error in the Degraded condition and returns it
// so that the request is retried with backoff.
func (r *Reconciler) failed(ctx context.Context, s *shutterv1.ScreenshotService, before *shutterv1.ScreenshotServiceStatus, err error) error {
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: shutterv1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: shutterv1.ReasonReconcileFailed, Message: err.Error(), ObservedGeneration: s.Generation})
	if serr := r.writeStatus(ctx, s, before); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}
