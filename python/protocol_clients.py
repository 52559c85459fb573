"""Calls a running Tagger through the clients people already run (issue 41): tritonclient[http]'s
InferenceServerClient (the Open Inference Protocol, with its default binary tensor data and with JSON)
and huggingface_hub's InferenceClient.text_classification (the Hugging Face shape). Prints one JSON object
of what they got; test/e2e/protocol-clients.test.ts compares it with Tagger's own POST /predict.

Usage: python protocol_clients.py http://127.0.0.1:PORT "text one" "text two" ...
"""

import json
import sys

import numpy as np
import tritonclient.http as httpclient
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError
from tritonclient.utils import InferenceServerException


def triton(url, texts):
    client = httpclient.InferenceServerClient(url=url.removeprefix("http://"))
    out = {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready("tagger"),
        "server": client.get_server_metadata(),
        "metadata": client.get_model_metadata("tagger"),
    }
    batch = np.array([t.encode("utf-8") for t in texts], dtype=np.object_)

    # The defaults: binary input, every default output in binary.
    given = httpclient.InferInput("text", [len(texts)], "BYTES")
    given.set_data_from_numpy(batch)
    result = client.infer("tagger", [given])
    out["binary"] = {
        "predicted_tag": [t.decode("utf-8") for t in result.as_numpy("predicted_tag")],
        "probability": result.as_numpy("probability").astype(float).tolist(),
        "prediction_id": [t.decode("utf-8") for t in result.as_numpy("prediction_id")],
    }

    # JSON input and outputs, asking for every tag's probability and the top 2 tags, [n, 1] shaped.
    column = httpclient.InferInput("text", [len(texts), 1], "BYTES")
    column.set_data_from_numpy(batch.reshape(len(texts), 1), binary_data=False)
    outputs = [
        httpclient.InferRequestedOutput("probabilities", binary_data=False),
        httpclient.InferRequestedOutput("predicted_tags", binary_data=True),
    ]
    result = client.infer("tagger", [column], outputs=outputs, parameters={"top_k": 2}, request_id="r-1")
    probabilities = result.as_numpy("probabilities")
    out["json"] = {
        "id": result.get_response()["id"],
        "probabilities_shape": list(probabilities.shape),
        "probabilities": probabilities.astype(float).tolist(),
        "predicted_tags": [[t.decode("utf-8") for t in row] for row in result.as_numpy("predicted_tags")],
    }

    # A version: the served run's id, as the metadata lists it.
    version = out["metadata"]["versions"][0]
    out["versioned_ready"] = client.is_model_ready("tagger", model_version=version)

    # Errors come back as InferenceServerException with the server's message and status.
    errors = {}
    try:
        client.get_model_metadata("no-such-model")
    except InferenceServerException as error:
        errors["unknown_model"] = {"status": error.status(), "message": error.message()}
    too_long = httpclient.InferInput("text", [1], "BYTES")
    too_long.set_data_from_numpy(np.array([b"x" * 10_001], dtype=np.object_))
    try:
        client.infer("tagger", [too_long])
    except InferenceServerException as error:
        errors["too_long"] = {"status": error.status(), "message": error.message()}
    result = client.infer("tagger", [too_long], parameters={"truncate": True})
    errors["truncated"] = result.get_response().get("parameters")
    out["errors"] = errors
    client.close()
    return out


def hugging_face(url, texts):
    client = InferenceClient(model=f"{url}/hf/text-classification")
    one = client.text_classification(texts[0])
    top = client.text_classification(texts[0], top_k=2)
    out = {
        "one": [{"label": e.label, "score": e.score} for e in one],
        "top2": [{"label": e.label, "score": e.score} for e in top],
        "softmax": [
            {"label": e.label, "score": e.score}
            for e in client.text_classification(texts[0], function_to_apply="softmax", top_k=1)
        ],
    }
    try:
        client.text_classification(texts[0], function_to_apply="none")
    except HfHubHTTPError as error:
        out["none"] = {"status": error.response.status_code, "message": error.response.json()["error"]}
    return out


def main():
    url, texts = sys.argv[1], sys.argv[2:]
    print(json.dumps({"triton": triton(url, texts), "hf": hugging_face(url, texts)}))


if __name__ == "__main__":
    main()
