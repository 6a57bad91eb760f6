//! The worker does not trust sandboxd: code in the sandbox may have killed it and put its own
//! daemon on the socket. Such a daemon can waste one command, never the worker's memory: more
//! output than the cap fails the call (an honest daemon stops at the cap and says so).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]
#![allow(clippy::disallowed_methods, reason = "test code starts its tasks freely; the rule is for the service's own")]

use std::time::{Duration, Instant};

use hermes_sandbox::proto::sandbox_server::{Sandbox, SandboxServer};
use hermes_sandbox::proto::{
    CheckpointInfo, CheckpointList, CheckpointRequest, CodeInput, CodeOutput, EditFileRequest, EditResponse, ExecEvent,
    ListCheckpointsRequest, ListDirRequest, ListDirResponse, ListProcessesRequest, PollProcessRequest, ProcessList,
    ProcessRef, ProcessStatus, ReadBytesRequest, ReadBytesResponse, ReadFileRequest, ReadFileResponse,
    ReadFirstRequest, ReadFirstResponse, RestoreRequest, RestoreResponse, SearchRequest, SearchResponse,
    StartProcessRequest, StatusRequest, StatusResponse, StdioInput, StdioOutput, UnpackRequest, UnpackResponse,
    WaitProcessRequest, WriteFileRequest, WriteProcessRequest, exec_event,
};
use hermes_sandbox::{Address, ExecRequest, RAW_OUTPUT_CAP, SandboxClient, SandboxError};
use tokio_stream::wrappers::{ReceiverStream, UnixListenerStream};
use tonic::{Request, Response, Status, Streaming};

/// Answers every command with output that never ends.
struct Flood;

type Reply<T> = Result<Response<T>, Status>;

fn refused() -> Status {
    Status::unimplemented("not this daemon")
}

#[tonic::async_trait]
impl Sandbox for Flood {
    type ExecStream = ReceiverStream<Result<ExecEvent, Status>>;
    type RunCodeStream = ReceiverStream<Result<CodeOutput, Status>>;
    type StdioStream = ReceiverStream<Result<StdioOutput, Status>>;
    type EgressStream = ReceiverStream<Result<hermes_sandbox::proto::EgressOutput, Status>>;

    async fn exec(&self, _: Request<hermes_sandbox::proto::ExecRequest>) -> Reply<Self::ExecStream> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let chunk = vec![b'x'; 256 * 1024];
            while tx.send(Ok(ExecEvent { event: Some(exec_event::Event::Output(chunk.clone())) })).await.is_ok() {}
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn run_code(&self, _: Request<Streaming<CodeInput>>) -> Reply<Self::RunCodeStream> {
        Err(refused())
    }

    async fn stdio(&self, _: Request<Streaming<StdioInput>>) -> Reply<Self::StdioStream> {
        Err(refused())
    }

    async fn egress(&self, _: Request<Streaming<hermes_sandbox::proto::EgressInput>>) -> Reply<Self::EgressStream> {
        Err(refused())
    }

    async fn start_process(&self, _: Request<StartProcessRequest>) -> Reply<ProcessStatus> {
        Err(refused())
    }

    async fn list_processes(&self, _: Request<ListProcessesRequest>) -> Reply<ProcessList> {
        Err(refused())
    }

    async fn poll_process(&self, _: Request<PollProcessRequest>) -> Reply<ProcessStatus> {
        Err(refused())
    }

    async fn wait_process(&self, _: Request<WaitProcessRequest>) -> Reply<ProcessStatus> {
        Err(refused())
    }

    async fn kill_process(&self, _: Request<ProcessRef>) -> Reply<ProcessStatus> {
        Err(refused())
    }

    async fn write_process(&self, _: Request<WriteProcessRequest>) -> Reply<ProcessStatus> {
        Err(refused())
    }

    async fn read_file(&self, _: Request<ReadFileRequest>) -> Reply<ReadFileResponse> {
        Err(refused())
    }

    async fn read_first(&self, _: Request<ReadFirstRequest>) -> Reply<ReadFirstResponse> {
        Err(refused())
    }

    async fn read_bytes(&self, _: Request<ReadBytesRequest>) -> Reply<ReadBytesResponse> {
        Err(refused())
    }

    async fn list_dir(&self, _: Request<ListDirRequest>) -> Reply<ListDirResponse> {
        Err(refused())
    }

    async fn write_file(&self, _: Request<WriteFileRequest>) -> Reply<EditResponse> {
        Err(refused())
    }

    async fn unpack(&self, _: Request<UnpackRequest>) -> Reply<UnpackResponse> {
        Err(refused())
    }

    async fn put_file(
        &self,
        _: Request<hermes_sandbox::proto::PutFileRequest>,
    ) -> Reply<hermes_sandbox::proto::PutFileResponse> {
        Err(refused())
    }

    async fn edit_file(&self, _: Request<EditFileRequest>) -> Reply<EditResponse> {
        Err(refused())
    }

    async fn search(&self, _: Request<SearchRequest>) -> Reply<SearchResponse> {
        Err(refused())
    }

    async fn checkpoint(&self, _: Request<CheckpointRequest>) -> Reply<CheckpointInfo> {
        Err(refused())
    }

    async fn list_checkpoints(&self, _: Request<ListCheckpointsRequest>) -> Reply<CheckpointList> {
        Err(refused())
    }

    async fn restore(&self, _: Request<RestoreRequest>) -> Reply<RestoreResponse> {
        Err(refused())
    }

    /// Looks alive, as the real one does.
    async fn status(&self, _: Request<StatusRequest>) -> Reply<StatusResponse> {
        Ok(Response::new(StatusResponse::default()))
    }
}

#[tokio::test]
async fn endless_output_from_a_replaced_daemon_fails_the_command_at_the_cap() {
    let dir = std::env::temp_dir().join(format!("hostile-sandboxd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("sandboxd.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SandboxServer::new(Flood))
            .serve_with_incoming(UnixListenerStream::new(listener)),
    );
    let client = SandboxClient::connect_within(&Address::Unix(socket.clone()), Duration::from_secs(5)).await.unwrap();

    let mut streamed = 0usize;
    let started = Instant::now();
    let request = ExecRequest {
        command: "yes".into(),
        workdir: None,
        timeout: Duration::from_secs(600),
        env: Default::default(),
    };
    let result = client.exec(request, &mut |bytes| streamed += bytes.len()).await;
    match result {
        Err(SandboxError::Backend(why)) => assert!(why.contains("more than"), "{why}"),
        other => panic!("the flood must fail the command, got {other:?}"),
    }
    assert!(streamed <= RAW_OUTPUT_CAP, "at most the cap was passed on: {streamed}");
    assert!(started.elapsed() < Duration::from_secs(30), "it stops at the cap, not at the timeout");
    std::fs::remove_dir_all(&dir).ok();
}
