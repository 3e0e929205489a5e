// The types of `@aws-sdk/client-sqs` that the README's SQS recipe uses, as that package declares
// them: the package is not a dependency of this repository.
export interface Message {
  MessageId?: string;
  ReceiptHandle?: string;
  Body?: string;
}

export interface DeleteMessageCommandInput {
  QueueUrl: string | undefined;
  ReceiptHandle: string | undefined;
}

export declare class DeleteMessageCommand {
  constructor(input: DeleteMessageCommandInput);
  readonly input: DeleteMessageCommandInput;
}

export declare class SQSClient {
  constructor(config?: object);
  send(command: DeleteMessageCommand): Promise<object>;
}
