// Package controllers holds the ScreenshotService reconciler: get, observe,
// build the desired objects (package manifests), apply them, report status.
package controllers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	shutterv1 "github.com/shutterhq/shutter/api/v1alpha1"
	"github.com/shutterhq/shutter/internal/manifests"
	"github.com/shutterhq/shutter/internal/version"
)

// FieldOwner is the server-side apply manager of every object the operator
// writes.
const FieldOwner = "shutter-operator"

// secretRefIndex indexes ScreenshotServices by the Secrets they reference.
const secretRefIndex = ".spec.secretNames"

// Reconciler reconciles ScreenshotServices.
type Reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder

	images atomic.Pointer[shutterv1.Images]
}

// SetImages sets the images a ScreenshotService runs when its spec names
// none: the operator's own release.
func (r *Reconciler) SetImages(i shutterv1.Images) { r.images.Store(&i) }

// releaseImages are the images of SetImages, or of this build's version.
func (r *Reconciler) releaseImages() shutterv1.Images {
	if i := r.images.Load(); i != nil {
		return *i
	}
	return manifests.ReleaseImages(version.String())
}

// The operator's permissions, each verb in use: children are written by
// server-side apply (create, patch); only the generated Secret is updated,
// and only optional children are deleted. Leader-election leases are a
// namespaced Role of their own (config/rbac, the chart).
// +kubebuilder:rbac:groups=shutter.dev,resources=screenshotservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=shutter.dev,resources=screenshotservices/status,verbs=get;update
// +kubebuilder:rbac:groups=shutter.dev,resources=screenshotservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the objects of one ScreenshotService in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s shutterv1.ScreenshotService
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		// Going away (held by someone's finalizer): its children go with
		// it through their owner references; recreating one would only
		// race the garbage collector.
		return ctrl.Result{}, nil
	}
	before := s.Status.DeepCopy()
	missing, err := r.reconcileChildren(ctx, &s)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, &s, before, err)
	}
	return ctrl.Result{}, r.updateStatus(ctx, &s, before, missing)
}

// reconcileChildren brings every child in line with the spec: the
// generated Secret, the objects the spec asks for (applied), the optional
// ones it no longer asks for (removed). It returns the referenced Secrets
// that are missing.
func (r *Reconciler) reconcileChildren(ctx context.Context, s *shutterv1.ScreenshotService) ([]string, error) {
	generated, err := r.ensureGenerated(ctx, s)
	if err != nil {
		return nil, err
	}
	secretHash, missing, err := r.secretDigest(ctx, s)
	if err != nil {
		return nil, err
	}
	// The generated secret is hashed from the value in hand: the cache may
	// not show a just-created Secret yet, and the hash must not change
	// when it does.
	secretHash[manifests.AuthSecretKey] = manifests.Hash(map[string]string{"v": generated[manifests.AuthSecretKey]})
	tokens := manifests.Hash(map[string]string{"v": generated[manifests.BrowserTokenKey], "p": generated[manifests.BrowserTokenPreviousKey]})
	secretHash[manifests.BrowserTokenKey] = tokens
	cm := manifests.ConfigMap(s)
	// The pods run the spec's images, else this operator's release: an
	// operator upgrade rolls what the spec does not pin.
	run := manifests.WithImages(s, r.releaseImages())
	s.Status.Images = shutterv1.Images{Server: run.Spec.Image, Browser: run.Spec.Browser.Image}
	desired := []client.Object{
		cm,
		manifests.APIDeployment(run, manifests.Hash(cm.Data, secretHash)),
		manifests.APIService(s),
		manifests.MetricsService(s),
		manifests.BrowserDeployment(run, tokens),
		manifests.BrowserService(s),
		manifests.BrowserNetworkPolicy(s),
		manifests.APINetworkPolicy(s),
	}
	for _, pdb := range manifests.PodDisruptionBudgets(s) {
		desired = append(desired, pdb)
	}
	optional, err := r.optionalChildren(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, obj := range append(desired, optional...) {
		if err := r.apply(ctx, obj); err != nil {
			return nil, fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return missing, nil
}

// optionalChildren are the autoscalers and the Ingress the spec asks for;
// those it does not ask for (any more) are removed, and so is a
// PodMonitor, which is applied here when asked for.
func (r *Reconciler) optionalChildren(ctx context.Context, s *shutterv1.ScreenshotService) ([]client.Object, error) {
	if err := r.podMonitor(ctx, s); err != nil {
		return nil, err
	}
	var out []client.Object
	hpas, drop := manifests.Autoscalers(s)
	for _, h := range hpas {
		out = append(out, h)
	}
	for _, name := range drop {
		if err := r.remove(ctx, &autoscalingv2.HorizontalPodAutoscaler{}, s.Namespace, name); err != nil {
			return nil, err
		}
	}
	if ing := manifests.Ingress(s); ing != nil {
		out = append(out, ing)
	} else if err := r.remove(ctx, &networkingv1.Ingress{}, s.Namespace, manifests.ServiceName(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// ensureGenerated creates the generated Secret once (AUTH_SECRET and
// BROWSER_TOKEN) and returns its values. A reconcile never changes a value,
// except to answer a new rotate-browser-token annotation: the current token
// becomes BROWSER_TOKEN_PREVIOUS, which both sides accept while the pods
// roll, and a new one is made.
func (r *Reconciler) ensureGenerated(ctx context.Context, s *shutterv1.ScreenshotService) (map[string]string, error) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: manifests.AuthSecretName(s)}
	var sec corev1.Secret
	err := r.Get(ctx, key, &sec)
	if apierrors.IsNotFound(err) {
		values := map[string]string{manifests.AuthSecretKey: randomValue(), manifests.BrowserTokenKey: randomValue()}
		// Create, not apply: if another reconcile created it meanwhile,
		// its values stay.
		if err := r.Create(ctx, manifests.AuthSecret(s, values)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("auth secret created concurrently; retrying")
			}
			return nil, fmt.Errorf("auth secret: %w", err)
		}
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, "AuthSecretCreated", "Create", "generated Secret %s", manifests.AuthSecretName(s))
		return values, nil
	}
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for k, v := range sec.Data {
		values[k] = string(v)
	}
	changed := false
	for _, k := range []string{manifests.AuthSecretKey, manifests.BrowserTokenKey} {
		if values[k] == "" { // a Secret of an older release
			values[k], changed = randomValue(), true
		}
	}
	want := s.Annotations[manifests.RotateBrowserTokenAnnotation]
	if want != "" && sec.Annotations[manifests.RotatedForAnnotation] != want {
		values[manifests.BrowserTokenPreviousKey] = values[manifests.BrowserTokenKey]
		values[manifests.BrowserTokenKey] = randomValue()
		if sec.Annotations == nil {
			sec.Annotations = map[string]string{}
		}
		sec.Annotations[manifests.RotatedForAnnotation] = want
		changed = true
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, "BrowserTokenRotated", "Rotate", "new browser token in Secret %s", sec.Name)
	}
	if changed {
		sec.Data = map[string][]byte{}
		for k, v := range values {
			sec.Data[k] = []byte(v)
		}
		if err := r.Update(ctx, &sec); err != nil {
			return nil, fmt.Errorf("auth secret: %w", err)
		}
	}
	return values, nil
}

// randomValue is 256 random bits, URL-safe base64.
func randomValue() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secretDigest reads the referenced Secret keys; their values feed the
// pod template's hash (so a rotated credential rolls the pods) and are
// never stored. It returns the references that are missing.
func (r *Reconciler) secretDigest(ctx context.Context, s *shutterv1.ScreenshotService) (map[string]string, []string, error) {
	digest := map[string]string{}
	var missing []string
	refs := manifests.SecretRefs(s)
	delete(refs, manifests.AuthSecretKey) // the generated ones are hashed by the caller
	delete(refs, manifests.BrowserTokenKey)
	for _, env := range slices.Sorted(maps.Keys(refs)) {
		ref := refs[env]
		var sec corev1.Secret
		err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: ref.Name}, &sec)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref.Name+"/"+ref.Key)
			continue
		case err != nil:
			return nil, nil, err
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			missing = append(missing, ref.Name+"/"+ref.Key)
			continue
		}
		digest[env] = manifests.Hash(map[string]string{"v": string(v)})
	}
	return digest, missing, nil
}

// apply writes obj with server-side apply: idempotent, and only the fields
// the operator sets are its own.
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u, "spec", "template", "metadata", "creationTimestamp")
	ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	return r.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// SetupWithManager watches ScreenshotServices, what they own, and the
// Secrets they reference.
// podMonitor applies the PodMonitor the spec asks for, or removes one it
// no longer does — when the Prometheus Operator's CRD exists; without it
// there is nothing to do (no hard dependency), and an event says so.
func (r *Reconciler) podMonitor(ctx context.Context, s *shutterv1.ScreenshotService) error {
	if _, err := r.RESTMapper().RESTMapping(manifests.PodMonitorGVK.GroupKind(), manifests.PodMonitorGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			if s.Spec.Monitoring.PodMonitor {
				r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, "PodMonitorUnavailable", "Monitor",
					"spec.monitoring.podMonitor is set, but the cluster has no PodMonitor CRD (Prometheus Operator)")
			}
			return nil
		}
		return err
	}
	if pm := manifests.PodMonitor(s); pm != nil {
		if err := r.apply(ctx, pm); err != nil {
			return fmt.Errorf("apply PodMonitor %s: %w", pm.GetName(), err)
		}
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(manifests.PodMonitorGVK)
	return r.remove(ctx, u, s.Namespace, s.Name)
}

// remove deletes an optional child the spec no longer asks for, when it
// is ours.
func (r *Reconciler) remove(ctx context.Context, obj client.Object, namespace, name string) error {
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.Kind != "ScreenshotService" {
		return nil // not ours: leave it
	}
	if err := r.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %T %s: %w", obj, name, err)
	}
	return nil
}

// CacheOptions are the manager's cache settings: with a namespace, only
// that one; and Secrets only of the types a ScreenshotService can use —
// the cluster's Helm release records and service-account tokens, often
// the largest and most numerous Secrets, never enter the operator's
// memory.
func CacheOptions(watchNamespace string) cache.Options {
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Field: fields.AndSelectors(
			fields.OneTermNotEqualSelector("type", "helm.sh/release.v1"),
			fields.OneTermNotEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)),
		)},
	}}
	if watchNamespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{watchNamespace: {}}
	}
	return o
}

func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &shutterv1.ScreenshotService{}, secretRefIndex,
		func(o client.Object) []string {
			s := o.(*shutterv1.ScreenshotService)
			var names []string
			for _, ref := range manifests.SecretRefs(s) {
				if !slices.Contains(names, ref.Name) {
					names = append(names, ref.Name)
				}
			}
			return names
		})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// A spec change, or an annotation (a rotation request); not the
		// operator's own status writes.
		For(&shutterv1.ScreenshotService{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.servicesOfSecret)).
		Named("screenshotservice").
		Complete(r)
}

func (r *Reconciler) servicesOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list shutterv1.ScreenshotServiceList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "list services of a secret", "secret", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return out
}
