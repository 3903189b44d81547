package config

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type sample struct {
	Limit int `env:"NEXUS_TEST_LIMIT, default=3"`
}

func (s *sample) Validate() error {
	if s.Limit < 1 {
		return errors.New("NEXUS_TEST_LIMIT must be at least 1")
	}
	return nil
}

func TestFrom(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantErr string
	}{
		{"default", nil, 3, ""},
		{"set", map[string]string{"NEXUS_TEST_LIMIT": "7"}, 7, ""},
		{"refused by Validate", map[string]string{"NEXUS_TEST_LIMIT": "0"}, 0, "NEXUS_TEST_LIMIT must be at least 1"},
		{"not a number", map[string]string{"NEXUS_TEST_LIMIT": "many"}, 0, "NEXUS_TEST_LIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := From[sample](context.Background(), Map(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Limit != tt.want {
				t.Fatalf("From = %+v, %v; want Limit %d", got, err, tt.want)
			}
		})
	}
}
