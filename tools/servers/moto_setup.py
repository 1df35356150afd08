"""Prepares a moto S3 server started with INITIAL_NO_AUTH_ACTION_COUNT=3 (so it checks every
SigV4 signature after three calls): an IAM user allowed s3:*, its access key, a bucket, and the
given files uploaded under their relative paths. Prints "KEY SECRET" for the test's environment.
Usage: python moto_setup.py ENDPOINT BUCKET ROOT [RELATIVE_PATH ...]
"""
import json
import os
import sys

import boto3

endpoint, bucket, root, *paths = sys.argv[1:]
anon = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **anon)
iam.create_user(UserName="ckpt")  # unauthenticated call 1
iam.put_user_policy(UserName="ckpt", PolicyName="s3", PolicyDocument=json.dumps(  # call 2
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
key = iam.create_access_key(UserName="ckpt")["AccessKey"]  # call 3; everything after is signed
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
s3.create_bucket(Bucket=bucket)
for rel in paths:
    s3.upload_file(os.path.join(root, rel), bucket, rel)
print(key["AccessKeyId"], key["SecretAccessKey"])
