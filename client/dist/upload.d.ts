/** Where an upload's bytes come from. */
export type FileSource = Blob | Uint8Array | ArrayBuffer
/** A file on disk (Node), read as it is sent. */
 | {
    path: string;
    filename?: string;
    contentType?: string;
}
/** Bytes in memory or a Blob, with the name and type the part is sent with. */
 | {
    data: Blob | Uint8Array | ArrayBuffer;
    filename?: string;
    contentType?: string;
}
/** A stream (a web ReadableStream, or anything async-iterable such as a Node Readable), read once. */
 | {
    stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
    filename?: string;
    contentType?: string;
};
/** Whether a form's value is a file (sent as a file part) rather than a text field. */
export declare function isFileSource(value: unknown): value is FileSource;
export interface MultipartBody {
    contentType: string;
    /** The body's length when every part's size is known (sent as Content-Length, so a too large upload is refused early). */
    length: number | undefined;
    /** A fresh body, from the start; null once a one-time stream has been sent. */
    open: () => ReadableStream<Uint8Array>;
    /** Whether the body can be sent again (no part is a one-time stream). */
    replayable: boolean;
}
/**
 * The multipart body of `form`: strings, numbers and booleans as text fields (an array as repeated `name[]`
 * fields, as the platform reads them), file sources as file parts after every text field; undefined and null
 * values are left out.
 */
export declare function multipartBody(form: Record<string, unknown>): Promise<MultipartBody>;
