package modelrouter

// This file classifies vendors' failures: by HTTP status, by the error
// kind named inside a stream, from the JSON bodies vendors send.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
	"nexus.local/platform/sse"
)

// vendorError is a failed vendor call, classified for retrying.
type vendorError struct {
	Vendor     string
	Status     int
	Code       modelv1.TurnErrorCode
	Message    string
	Retryable  bool
	RetryAfter time.Duration
}

func (e *vendorError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d %s: %s", e.Vendor, e.Status, enumname.Short(e.Code), e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Vendor, enumname.Short(e.Code), e.Message)
}

// asVendorError classifies any error from an adapter; transport failures are
// retryable because nothing reached the model.
func asVendorError(vendor string, err error) *vendorError {
	var ve *vendorError
	if errors.As(err, &ve) {
		return ve
	}
	return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_UNAVAILABLE, Message: err.Error(), Retryable: true}
}

// statusCode maps an HTTP status to a TurnError code and whether a retry may help.
func statusCode(status int) (modelv1.TurnErrorCode, bool) {
	switch {
	case status == http.StatusTooManyRequests:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_RATE_LIMITED, true
	case status == 529:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, true
	case status == http.StatusRequestTimeout:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_TIMEOUT, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_UNAUTHORIZED, false
	case status == http.StatusNotFound:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_NOT_FOUND, false
	case status == http.StatusRequestEntityTooLarge:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_REQUEST_TOO_LARGE, false
	case status >= 500:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, true
	default:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_INVALID_REQUEST, false
	}
}

// streamErrorCode maps an error type named inside a vendor stream.
func streamErrorCode(kind string) (modelv1.TurnErrorCode, bool) {
	switch {
	case strings.Contains(kind, "overloaded"), strings.Contains(kind, "unavailable"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, true
	case strings.Contains(kind, "rate_limit"), strings.Contains(kind, "resource_exhausted"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_RATE_LIMITED, true
	case strings.Contains(kind, "api_error"), strings.Contains(kind, "server_error"), strings.Contains(kind, "internal"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, true
	default:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, false
	}
}

// errorMessage pulls the message out of the JSON error bodies vendors send
// ({"error":{"message":...}} or a list of those), else returns the raw text.
func errorMessage(body []byte) string {
	var one struct {
		Error struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &one) == nil && one.Error.Message != "" {
		return strings.TrimSpace(one.Error.Type + one.Error.Status + ": " + one.Error.Message)
	}
	var many []json.RawMessage
	if json.Unmarshal(body, &many) == nil && len(many) > 0 {
		return errorMessage(many[0])
	}
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "no error body"
	}
	return s
}

// streamCut is the error when a stream ends before the vendor said it was done.
func streamCut(vendor string, err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sse.ErrCut) {
		return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, Message: "the stream ended before the turn was complete", Retryable: true}
	}
	return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, Message: err.Error(), Retryable: true}
}
