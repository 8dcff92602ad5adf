"""A minimal OTLP/HTTP trace receiver on 127.0.0.1 (for tests/serve_otel.rs).

Prints `port N` once listening, then one JSON line per received span
(name, trace_id, span_id, parent_span_id, attributes as strings), decoded
with the OpenTelemetry protobuf definitions (PyPI opentelemetry-proto).
Answers every POST to /v1/traces with an empty ExportTraceServiceResponse.
Exits after `seconds` (argv[1]) so it never outlives its test.
"""
import http.server
import json
import sys
import threading

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok = self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
        if ok:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        attrs = {a.key: str(getattr(a.value, a.value.WhichOneof("value"))) for a in span.attributes}
                        print(json.dumps({"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                          "parent_span_id": span.parent_span_id.hex(), "attributes": attrs}), flush=True)
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString() if ok else b""
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"port {server.server_address[1]}", flush=True)
threading.Timer(float(sys.argv[1]), server.shutdown).start()
server.serve_forever()
