"""What both HTTP APIs share (`stepwise serve` and the services' control plane).

The JSON error envelope with its stable codes (`stepwise.http.errors`), the token gate and the
body limit (`stepwise.http.security`), and `STEPWISE_API_TOKEN` with the exposure check, which
import no web framework (`stepwise.http.settings`).
"""
