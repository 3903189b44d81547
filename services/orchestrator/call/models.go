package call

// This file keeps the 3D models a host exports with a result in the
// session's model store, out of the run's state.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// keepModels moves the 3D models a host exported with a call's result (the
// state the script left or would leave, and a preview's state before) to
// the session's model store, and answers the result without their bytes:
// the models are the person's, fetched by the call's id, so the run's
// state, its event log and the transcript carry only their element ids and
// size. A model the store could not keep is said in the result's note.
func (r *Call) keepModels(ctx context.Context, callID string, hr *hostv1.HostResult) *hostv1.HostResult {
	if len(hr.GetModel().GetData()) == 0 && len(hr.GetModelBefore().GetData()) == 0 {
		return hr
	}
	out := proto.Clone(hr).(*hostv1.HostResult)
	keep := func(m *hostv1.ExportedModel, which state.ModelState) error {
		if len(m.GetData()) == 0 {
			return nil
		}
		if err := r.s.Models.PutModel(ctx, r.SessionID, callID, which, m); err != nil {
			return err
		}
		m.SizeBytes, m.Data = int64(len(m.GetData())), nil
		return nil
	}
	if err := keep(out.GetModel(), state.ModelAfter); err != nil {
		r.Log.Warn("review model not kept", "tool_call", callID, "error", err)
		out.Model, out.ModelNote = nil, fmt.Sprintf("the 3D model could not be kept: %v", err)
	}
	if err := keep(out.GetModelBefore(), state.ModelBefore); err != nil {
		r.Log.Warn("review model before not kept", "tool_call", callID, "error", err)
		out.ModelBefore, out.ModelBeforeNote = nil, fmt.Sprintf("the 3D model could not be kept: %v", err)
	}
	return out
}
