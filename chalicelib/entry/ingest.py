"""The ingest function: S3 ObjectCreated notifications and VCS publishing jobs, from SQS."""

from chalice import Chalice

from chalicelib.core.settings import get_settings

app = Chalice(app_name="registry-ingest")


@app.on_sqs_message(queue=get_settings().ingest_queue, batch_size=1)
def ingest(event):
    """Each SQS message is one S3 event or one publishing job; a failure leaves it for SQS
    to retry."""
    from chalicelib.modules.consumer import handle_sqs_body

    for message in event:
        handle_sqs_body(message.body)
