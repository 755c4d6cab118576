"""Transforms a SAM template to CloudFormation JSON offline, with the SAM translator the project pins.

Usage: sam_transform.py TEMPLATE [PARAMS_JSON]
PARAMS_JSON is a JSON object of parameter values (parameters left out take their defaults).
The CloudFormation JSON is written to stdout; a translation error exits 1 with SAM's message.

No AWS call is made: the managed-policy loader is a stub (SAM asks it only for managed policies
named without an ARN, which the template must not use: a name is looked up in the account), and
local CodeUri paths are replaced by S3 URIs as `sam deploy` replaces them after uploading, and
the region (hence the partition) is AWS_DEFAULT_REGION, us-east-1 when unset.
"""

import json
import os
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class OfflinePolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader, which lists the account's IAM policies."""

    def load(self):
        raise SystemExit(
            "sam_transform.py: the template names a managed policy without its ARN, which SAM "
            "resolves by listing the account's IAM policies; use the policy's ARN instead"
        )


def package(template):
    """Points every local CodeUri at S3, as `sam package` does once it has uploaded the code."""
    for logical_id, res in template.get("Resources", {}).items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.setdefault("Properties", {})
        uri = props.get("CodeUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            props["CodeUri"] = f"s3://offline-sam-artifacts/{logical_id}.zip"


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        template = yaml_parse(f.read())
    package(template)
    params = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    try:
        out = transform(template, params, OfflinePolicyLoader())
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(cause.message, file=sys.stderr)
        sys.exit(1)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
