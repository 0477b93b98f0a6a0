# muster's server image, for those who build with a container runtime. `make image`
# builds the same image with no daemon (internal/image: scratch, one layer, user 65532)
# and is what CI checks. Only muster-scheduler (serve and version) goes in: the muster
# command carries the sandbox's embedded kube-apiserver and etcd, the simulator and the
# benchmark, which a cluster has no use for.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/muster-scheduler ./cmd/muster-scheduler \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/group

FROM scratch
COPY --from=build /out/passwd /out/group /etc/
COPY --from=build /out/muster-scheduler /usr/local/bin/muster-scheduler
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/muster-scheduler"]
CMD ["serve"]
