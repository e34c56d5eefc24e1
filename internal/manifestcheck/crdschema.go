package manifestcheck

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdNames are the CustomResourceDefinitions of the operator's kinds (config/crd/bases; a test
// keeps the two equal). The plan reader role may get exactly these.
var crdNames = map[schema.GroupKind]string{
	{Group: "cluster.router.io", Kind: "ClusterIdentity"}:  "clusteridentities.cluster.router.io",
	{Group: "cluster.router.io", Kind: "DNSConfiguration"}: "dnsconfigurations.cluster.router.io",
	{Group: "routing.router.io", Kind: "DNSPolicy"}:        "dnspolicies.routing.router.io",
	{Group: "routing.router.io", Kind: "Gateway"}:          "gateways.routing.router.io",
	{Group: "routing.router.io", Kind: "ServiceRoute"}:     "serviceroutes.routing.router.io",
}

// ours says whether a group is one of the operator's: its manifests are validated against its CRDs.
func ours(group string) bool { return group == "cluster.router.io" || group == "routing.router.io" }

// Schemas are what the API server validates and defaults a custom resource with, per served
// GroupVersionKind: built from the CustomResourceDefinitions as kube-apiserver builds them
// (apiextensions-apiserver's customresource_handler.go), with the same validators.
type Schemas map[schema.GroupVersionKind]*crdSchema

type crdSchema struct {
	namespaced bool
	structural *structuralschema.Structural
	openAPI    apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil: no x-kubernetes-validations
}

// ReadSchemas reads from the cluster the CRDs of the operator's kinds among objs: the rules of
// the CRD version the cluster serves, which may be another release's than this plugin's.
//
// A CRD the plugin may not read is an error, never a fallback to the CRDs compiled into the
// plugin: a GitOps gate that passes on a guess is the failure this check exists to prevent (an
// operator upgrade tightens a rule, the gate still says yes), and plan never plans from a partial
// view. The plan reader role of this release grants the read.
func ReadSchemas(ctx context.Context, c client.Reader, objs []*unstructured.Unstructured) (Schemas, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	read := map[string]bool{}
	for _, u := range objs {
		name, ok := crdNames[u.GroupVersionKind().GroupKind()]
		if !ok || read[name] {
			continue
		}
		read[name] = true
		crd, err := readCRD(ctx, c, name)
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return SchemasOf(crds...)
}

func readCRD(ctx context.Context, c client.Reader, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("CustomResourceDefinition %s is not installed: install the operator's CRDs first (docs/INSTALLATION.md)", name)
		}
		return nil, fmt.Errorf("reading CustomResourceDefinition %s, to validate the manifests as the API server does (the plan reader role grants it, docs/PLUGIN.md): %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
	}
	return crd, nil
}

// SchemasOf builds the schemas of every served version of the CRDs.
func SchemasOf(crds ...*apiextensionsv1.CustomResourceDefinition) (Schemas, error) {
	out := Schemas{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			s, err := newCRDSchema(v.Schema, crd.Spec.Scope == apiextensionsv1.NamespaceScoped)
			if err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s version %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = s
		}
	}
	return out, nil
}

// newCRDSchema is what apiextensions-apiserver's customresource_handler.go does with a version's
// schema: the internal form, its structural schema with defaults pruned, the OpenAPI validator
// and the CEL rules.
func newCRDSchema(v1 *apiextensionsv1.CustomResourceValidation, namespaced bool) (*crdSchema, error) {
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, err
	}
	openAPI, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &crdSchema{namespaced: namespaced, structural: s, openAPI: openAPI, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
}

// decode is what the API server's decoder does to a custom resource before validating it, with
// kubectl's strict field validation: an unknown field refuses the request, the rest is defaulted.
func (s *crdSchema) decode(u *unstructured.Unstructured) error {
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return undecodable(u, err)
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	if len(unknown) > 0 {
		errs := make([]error, len(unknown))
		for i, path := range unknown {
			errs[i] = fmt.Errorf("unknown field %q", path)
		}
		return undecodable(u, runtime.NewStrictDecodingError(errs))
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s.structural)
	structuraldefaulting.Default(u.Object, s.structural)
	return nil
}

// undecodable is the API server's 400 for a request body it cannot decode.
func undecodable(u *unstructured.Unstructured, err error) error {
	gvk := u.GroupVersionKind()
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
}

// validate is customResourceStrategy.Validate (old nil: a create) or ValidateUpdate (with the
// ratcheting of unchanged invalid values, on by default since Kubernetes 1.30): the object's
// metadata, the OpenAPI schema, embedded objects, list types, then the CEL rules. Metadata is
// validated as on create in both cases: an update's extra checks (UID, creation time) concern
// fields a manifest does not carry.
func (s *crdSchema) validate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaAccessor(u, s.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	var celOptions []cel.Option
	if old == nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, s.openAPI)...)
	} else {
		correlated := common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: s.structural})
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, old.Object, s.openAPI, apiservervalidation.WithRatcheting(correlated))...)
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	if s.cel == nil {
		return errs
	}
	if blocking := hasBlockingErr(errs); blocking != nil {
		return append(errs, blocking)
	}
	var oldObject any
	if old != nil {
		oldObject = old.Object
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, u.Object, oldObject, celconfig.RuntimeCELCostBudget, celOptions...)
	return append(errs, celErrs...)
}

// hasBlockingErr is the API server's own (customresource/strategy.go, unexported there): after a
// type, enum, required or size violation the CEL rules are not run, and it says so.
func hasBlockingErr(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// resourceOf is the resource of one of the operator's kinds (serviceroutes.routing.router.io),
// as the API server names it in a NotFound.
func resourceOf(gk schema.GroupKind) schema.GroupResource {
	plural, _, _ := strings.Cut(crdNames[gk], ".")
	return schema.GroupResource{Group: gk.Group, Resource: plural}
}
