//! What comes back from a secret's host, scanned for the secret's value before it reaches the
//! sandbox: a host that echoes a request (an error page quoting the `Authorization` header)
//! must not hand the value to the agent. The value is replaced by the placeholder, in headers
//! and in the body as it streams, even where it straddles two chunks.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http::header::HeaderValue;
use hyper::body::{Body, Frame, SizeHint};

use crate::Secret;

/// A streaming replacer of values by placeholders.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// (value, placeholder), longest value first.
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    /// Bytes held back because they may begin a value the next chunk completes.
    held: Vec<u8>,
}

impl Redactor {
    pub fn new(secrets: &[Secret]) -> Self {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = secrets
            .iter()
            .filter(|s| !s.value.is_empty())
            .map(|s| (s.value.clone().into_bytes(), s.placeholder.clone().into_bytes()))
            .collect();
        pairs.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        Self { pairs, held: Vec::new() }
    }

    /// The bytes of `chunk` (after those held back) that are safe to pass on.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(buf.len());
        let mut i = 0;
        'scan: while i < buf.len() {
            let rest = &buf[i..];
            for (value, placeholder) in &self.pairs {
                if rest.starts_with(value) {
                    out.extend_from_slice(placeholder);
                    i += value.len();
                    continue 'scan;
                }
                if rest.len() < value.len() && value.starts_with(rest) {
                    self.held = rest.to_vec();
                    return out;
                }
            }
            out.push(buf[i]);
            i += 1;
        }
        out
    }

    /// What was held back, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    /// `text` with every value replaced.
    pub fn whole(&self, text: &[u8]) -> Vec<u8> {
        let mut once = Self { pairs: self.pairs.clone(), held: Vec::new() };
        let mut out = once.push(text);
        out.extend(once.finish());
        out
    }

    /// Replaces values in every header.
    pub fn headers(&self, headers: &mut HeaderMap) {
        for value in headers.values_mut() {
            let redacted = self.whole(value.as_bytes());
            if redacted != value.as_bytes()
                && let Ok(new) = HeaderValue::from_bytes(&redacted)
            {
                *value = new;
            }
        }
    }

    /// Whether redacting can change a body's length (then its `Content-Length` must go).
    pub fn changes_lengths(&self) -> bool {
        self.pairs.iter().any(|(value, placeholder)| value.len() != placeholder.len())
    }
}

/// A response body passed through a [`Redactor`].
pub struct RedactingBody<B> {
    inner: B,
    redactor: Redactor,
    /// Trailers that came while bytes were held back: they follow those bytes.
    trailers: Option<Frame<Bytes>>,
    done: bool,
}

impl<B> RedactingBody<B> {
    pub fn new(inner: B, redactor: Redactor) -> Self {
        Self { inner, redactor, trailers: None, done: false }
    }
}

impl<B> Body for RedactingBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        if let Some(trailers) = this.trailers.take() {
            this.done = true;
            return Poll::Ready(Some(Ok(trailers)));
        }
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => Poll::Ready(Some(Ok(Frame::data(Bytes::from(this.redactor.push(&data)))))),
                // Trailers end the body: what was held back goes before them.
                Err(trailers) => {
                    let held = this.redactor.finish();
                    if held.is_empty() {
                        this.done = true;
                        Poll::Ready(Some(Ok(trailers)))
                    } else {
                        this.trailers = Some(trailers);
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(held)))))
                    }
                }
            },
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => {
                this.done = true;
                let held = this.redactor.finish();
                if held.is_empty() { Poll::Ready(None) } else { Poll::Ready(Some(Ok(Frame::data(Bytes::from(held))))) }
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Placement;

    fn redactor() -> Redactor {
        Redactor::new(&[Secret {
            name: "T".into(),
            placeholder: "PLACEHOLDER".into(),
            value: "s3cret-value".into(),
            hosts: vec![],
            placement: Placement::default(),
        }])
    }

    #[test]
    fn a_value_is_replaced_even_when_split_across_chunks_at_every_point() {
        let body = b"error: bad token s3cret-value for s3cret-valu and s3cret-value.";
        let want = b"error: bad token PLACEHOLDER for s3cret-valu and PLACEHOLDER.".to_vec();
        for cut in 0..body.len() {
            let mut r = redactor();
            let mut out = r.push(&body[..cut]);
            out.extend(r.push(&body[cut..]));
            out.extend(r.finish());
            assert_eq!(out, want, "cut at {cut}");
        }
        // One byte at a time.
        let mut r = redactor();
        let mut out: Vec<u8> = body.iter().flat_map(|b| r.push(&[*b])).collect();
        out.extend(r.finish());
        assert_eq!(out, want);
    }

    #[test]
    fn headers_are_redacted_too() {
        let mut headers = HeaderMap::new();
        headers.insert("x-echo", HeaderValue::from_static("Bearer s3cret-value"));
        redactor().headers(&mut headers);
        assert_eq!(headers["x-echo"], "Bearer PLACEHOLDER");
    }
}
