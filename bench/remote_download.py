#!/usr/bin/env python3
"""The download-first way, for bench/remote.sh: every object under s3://BUCKET/PREFIX fetched
whole with boto3's managed transfer (ranged parts in parallel, as `aws s3 cp --recursive`
does) into DEST, keeping the relative paths. Credentials and endpoint from the environment.
Prints one JSON line: objects, bytes, seconds.

    remote_download.py BUCKET PREFIX DEST
"""
import json
import os
import sys
import time

import boto3

bucket, prefix, dest = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ["AWS_REGION"])
t = time.perf_counter()
objects, total = 0, 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
    for o in page.get("Contents", []):
        path = os.path.join(dest, os.path.relpath(o["Key"], prefix))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file(bucket, o["Key"], path)
        objects, total = objects + 1, total + o["Size"]
print(json.dumps({"objects": objects, "bytes": total, "seconds": round(time.perf_counter() - t, 3)}))
