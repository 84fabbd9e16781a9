package master

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
)

// Authorization on the write path. Every public write entry point (files
// api_*.go) consults the Config.Authorizer on the loop, before it changes
// anything, through authorize; a refusal is a 403 *APIError naming the
// action (docs/security.md lists which action governs which call). The
// ACCEPT path asks per operation (launches per task, in state_accept.go
// and offer_ops.go) with the framework's principal as the subject, as
// Mesos does. The read side (master/endpoints) filters what it renders
// with the same Authorizer, off the loop.

// authorize asks whether p may perform action on every one of objs (on
// AnyObject when none is given): nil, or a 403 *APIError naming the
// action and the first object refused. Each refusal is logged and counted
// (master/authorization_denials).
func (s *state) authorize(p Principal, action authorizer.Action, objs ...authorizer.Object) error {
	if s.cfg.Authorizer == nil {
		return nil
	}
	if len(objs) == 0 {
		objs = []authorizer.Object{authorizer.AnyObject}
	}
	for _, o := range objs {
		if !authorizer.Allowed(s.cfg.Authorizer, authorizer.Request{Subject: p.Name, Action: action, Object: o}) {
			s.count("master/authorization_denials")
			err := notAuthorized(p.Name, action, o)
			s.log.Warn("authorization denied", "principal", p.Name, "action", string(action), "object", o.String())
			return err
		}
	}
	return nil
}

// notAuthorized is the 403 refusing subject action on o.
func notAuthorized(subject string, action authorizer.Action, o authorizer.Object) *APIError {
	who := Viewer{Subject: subject}.Who()
	msg := fmt.Sprintf("%s%s is not authorized to %s", strings.ToUpper(who[:1]), who[1:], action)
	if !o.Any {
		msg += fmt.Sprintf(" (%s %q)", strings.TrimSuffix(authorizer.ObjectField(action), "s"), o.Value)
	}
	return &APIError{Status: http.StatusForbidden, Message: msg}
}

// authorizedAsync is callAsync for a write p must be authorized for
// (action on objs) before fn runs.
func (m *Master) authorizedAsync(ctx context.Context, p Principal, action authorizer.Action, objs []authorizer.Object, fn func(s *state, now time.Time, finish func(error))) error {
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) {
		if err := s.authorize(p, action, objs...); err != nil {
			finish(err)
			return
		}
		fn(s, now, finish)
	})
}

// roleObjects are the objects of a role-based action on roles.
func roleObjects(roles []string) []authorizer.Object {
	out := make([]authorizer.Object, len(roles))
	for i, r := range roles {
		out[i] = authorizer.Value(r)
	}
	return out
}

// authorizeOperation asks whether principal may perform a normalized
// (post-refinement) conversion operation, as Mesos authorizes each of its
// resources: RESERVE by the reservation's role, UNRESERVE by the principal
// that reserved, CREATE by the volume's role, DESTROY by the principal
// that created the volume, GROW_VOLUME and SHRINK_VOLUME (resize_volumes)
// by the volume's role.
func (s *state) authorizeOperation(principal string, op *mesos.Offer_Operation) error {
	var action authorizer.Action
	var objs []authorizer.Object
	each := func(rs []*mesos.Resource, obj func(*mesos.Resource) string) {
		for _, r := range rs {
			objs = append(objs, authorizer.Value(obj(r)))
		}
	}
	reserver := func(r *mesos.Resource) string {
		if n := len(r.GetReservations()); n > 0 {
			return r.GetReservations()[n-1].GetPrincipal()
		}
		return ""
	}
	creator := func(r *mesos.Resource) string { return r.GetDisk().GetPersistence().GetPrincipal() }
	switch op.GetType() {
	case mesos.Offer_Operation_RESERVE:
		action = authorizer.ReserveResources
		each(op.GetReserve().GetResources(), topRole)
	case mesos.Offer_Operation_UNRESERVE:
		action = authorizer.UnreserveResources
		each(op.GetUnreserve().GetResources(), reserver)
	case mesos.Offer_Operation_CREATE:
		action = authorizer.CreateVolume
		each(op.GetCreate().GetVolumes(), topRole)
	case mesos.Offer_Operation_DESTROY:
		action = authorizer.DestroyVolume
		each(op.GetDestroy().GetVolumes(), creator)
	case mesos.Offer_Operation_GROW_VOLUME:
		action = authorizer.ResizeVolume
		each([]*mesos.Resource{op.GetGrowVolume().GetVolume()}, topRole)
	case mesos.Offer_Operation_SHRINK_VOLUME:
		action = authorizer.ResizeVolume
		each([]*mesos.Resource{op.GetShrinkVolume().GetVolume()}, topRole)
	default:
		return nil
	}
	return s.authorize(Principal{Name: principal}, action, objs...)
}
