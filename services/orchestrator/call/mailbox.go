package call

// This file builds and reads what a pending call's mailbox holds besides a
// host result: a review decision or a courier's failure.

import (
	"fmt"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/metrics"
)

func ReviewDelivery(d *orchestratorv1.ReviewDecision) *orchestratorv1.MailboxDelivery {
	return &orchestratorv1.MailboxDelivery{Kind: &orchestratorv1.MailboxDelivery_Review{Review: d}}
}

func AsReviewDecision(c *orchestratorv1.MailboxDelivery) (*orchestratorv1.ReviewDecision, bool) {
	return c.GetReview(), c.GetReview() != nil
}

func CourierDelivery(f *agentv1.CourierFailure) *orchestratorv1.MailboxDelivery {
	return &orchestratorv1.MailboxDelivery{Kind: &orchestratorv1.MailboxDelivery_CourierFailure{CourierFailure: f}}
}

func asCourierFailure(c *orchestratorv1.MailboxDelivery) (*agentv1.CourierFailure, bool) {
	return c.GetCourierFailure(), c.GetCourierFailure() != nil
}

// courierFailureText is what the model's transcript says of a call its
// courier could not deliver; the run ends with the error itself.
func courierFailureText(f *agentv1.CourierFailure) string {
	return fmt.Sprintf("Not run: the courier could not deliver the script to the host (%s: %s). Nothing ran.", metrics.CodeName(f.GetCode()), f.GetMessage())
}

// IsCourierFailure says whether c is one of the failures a courier may
// report instead of a result.
func IsCourierFailure(c agentv1.ErrorCode) bool {
	switch c {
	case agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE, agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED,
		agentv1.ErrorCode_ERROR_CODE_HOST_NOT_PAIRED, agentv1.ErrorCode_ERROR_CODE_HOST_MISMATCH:
		return true
	}
	return false
}
