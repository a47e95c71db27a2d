package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// traceFlushTimeout bounds the export of the spans still queued when serve
// stops.
const traceFlushTimeout = 5 * time.Second

// defaultServiceName is service.name when OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) does not name one.
const defaultServiceName = "switchboard"

// tracingWanted reports whether the standard OpenTelemetry variables ask
// for traces: OTEL_TRACES_EXPORTER set to anything but "none", or an OTLP
// endpoint set (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_TRACES_EXPORTER is
// "none" or OTEL_SDK_DISABLED is true.
func tracingWanted(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exporter := getenv("OTEL_TRACES_EXPORTER"); exporter {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	return true
}

// startTracing returns the TracerProvider of serve, and flush, which
// exports what is queued, within traceFlushTimeout, and stops it. Without
// the variables that ask for traces (see tracingWanted), it creates
// nothing: the provider is nil (the libraries' default, which records
// nothing) and flush does nothing. The exporter, its protocol and
// endpoint, the batch processor's settings and the sampler come from the
// standard OTEL_* variables (go.opentelemetry.io/contrib's autoexport and
// the SDK read them); a bad one is an error that names it. stdio says
// whether standard output carries the protocol: then the console exporter
// is refused.
func startTracing(ctx context.Context, stdio bool, logger *slog.Logger) (_ trace.TracerProvider, flush func(), _ error) {
	nothing := func() {}
	if !tracingWanted(os.Getenv) {
		return nil, nothing, nil
	}
	exporterName := os.Getenv("OTEL_TRACES_EXPORTER")
	if exporterName == "console" && stdio {
		return nil, nil, errors.New(`OTEL_TRACES_EXPORTER "console" (standard output) and --stdio exclude each other: standard output carries the protocol; use otlp`)
	}
	exporter, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, exporterError(exporterName, err)
	}
	for _, name := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if v := os.Getenv(name); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				logger.Warn("tracing: the variable is not a positive whole number; its default applies", "variable", name, "value", v)
			}
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(implementation().Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		// A partial resource is still usable: the variable's bad part is
		// left out.
		logger.Warn("tracing: OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME is partly invalid", "error", err)
	}
	// The exporter's failures (a collector that is down) are logged, one
	// a minute at most.
	var lastWarned atomic.Int64
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		now, last := time.Now().UnixNano(), lastWarned.Load()
		if (last == 0 || now-last >= int64(time.Minute)) && lastWarned.CompareAndSwap(last, now) {
			logger.Warn("tracing: export failed (this warning comes at most once a minute)", "error", err)
		}
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	logger.Info("tracing on", "exporter", cmp.Or(exporterName, "otlp"))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			logger.Warn("tracing: spans were not all exported at shutdown", "timeout", traceFlushTimeout, "error", err)
		}
	}, nil
}

// exporterError names the variable of autoexport's err.
func exporterError(exporterName string, err error) error {
	switch {
	case strings.Contains(err.Error(), "protocol"):
		proto := "OTEL_EXPORTER_OTLP_PROTOCOL"
		if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") != "" {
			proto = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		}
		return fmt.Errorf("tracing: %s=%q: want grpc or http/protobuf: %w", proto, os.Getenv(proto), err)
	case exporterName != "" && exporterName != "otlp":
		return fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: want otlp, console or none: %w", exporterName, err)
	}
	return fmt.Errorf("tracing: the OTLP exporter (OTEL_EXPORTER_OTLP_*): %w", err)
}
