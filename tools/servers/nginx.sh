#!/usr/bin/env bash
# Runs nginx in the foreground on 127.0.0.1:PORT serving ROOT with byte ranges, ETags and
# If-Match (its static module does all three), everything it writes kept under DIR; the
# access log (DIR/access.log) has one line per request: status, body bytes sent, Range,
# If-Match, URI, which tst_remote reads to count what a command fetched.
# Usage: tools/servers/nginx.sh DIR PORT ROOT     (stop it with SIGTERM/SIGQUIT)
set -euo pipefail
dir=$1 port=$2 root=$3
mkdir -p "$dir/tmp"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
user=""; [ "$(id -u)" -eq 0 ] && user="user root;" # workers must read ROOT, which root may own
cat > "$dir/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 256; }
http {
  log_format counted '\$status \$body_bytes_sent "\$http_range" "\$http_if_match" \$request_uri';
  access_log $dir/access.log counted;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  types { application/octet-stream pt safetensors bin; }
  server {
    listen 127.0.0.1:$port;
    root $root;
    location /redirect/ { rewrite ^/redirect/(.*)\$ /\$1 redirect; }
    location /loop/ { rewrite ^/loop/(.*)\$ /loop/\$1 redirect; }
  }
}
CONF
exec "$nginx" -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf"
