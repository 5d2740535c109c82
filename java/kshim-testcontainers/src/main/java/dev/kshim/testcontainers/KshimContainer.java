package dev.kshim.testcontainers;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * kshim (a Kafka group coordinator in front of a real Kafka) as a Testcontainers container.
 *
 * <p>kshim answers the group APIs itself and forwards everything else to its upstream, rewriting
 * every broker address to its own: the bootstrap port, and one port per broker node (listen port
 * + 1 + node id). Clients on the host reach kshim at {@link #getBootstrapServers()}, so those ports
 * are published one to one (kshim advertises them) on free ports found at construction.
 *
 * <pre>
 * Network network = Network.newNetwork();
 * KafkaContainer kafka = new KafkaContainer("apache/kafka:4.4.0").withNetwork(network).withListener("kafka:19092");
 * KshimContainer kshim = new KshimContainer("kshim:local").withNetwork(network).withUpstream("kafka:19092").dependsOn(kafka);
 * kshim.start();
 * String bootstrap = kshim.getBootstrapServers();
 * </pre>
 *
 * <p>Ready when the image's HEALTHCHECK passes (kshim answers ApiVersions). Extra {@code kshim run}
 * flags: {@link #withKshimArgs(String...)}; every setting is also an environment variable
 * {@code KSHIM_<SETTING>} ({@code withEnv}).
 */
public class KshimContainer extends GenericContainer<KshimContainer> {
    private static final int FIRST_PORT = 29650;
    private static final int LAST_PORT = 31999;

    private final int listenPort;
    private final int nodes;
    private String upstream;
    private final List<String> extraArgs = new ArrayList<>();

    public KshimContainer(String image) {
        this(DockerImageName.parse(image), 1);
    }

    /** {@code nodes}: how many broker nodes (ids 1..nodes) the upstream has; each gets a published port. */
    public KshimContainer(DockerImageName image, int nodes) {
        super(image);
        this.nodes = nodes;
        this.listenPort = freePorts(nodes + 2);
        addFixedExposedPort(listenPort, listenPort);
        for (int id = 1; id <= nodes; id++) {
            addFixedExposedPort(nodePort(id), nodePort(id));
        }
        waitingFor(Wait.forHealthcheck());
    }

    /** The upstream Kafka's bootstrap as seen from kshim's container (e.g. a KafkaContainer listener on the same network). */
    public KshimContainer withUpstream(String bootstrap) {
        this.upstream = bootstrap;
        return self();
    }

    public KshimContainer withKshimArgs(String... args) {
        extraArgs.addAll(List.of(args));
        return self();
    }

    @Override
    protected void configure() {
        if (upstream == null) {
            throw new IllegalStateException("KshimContainer needs withUpstream(bootstrap)");
        }
        List<String> command = new ArrayList<>(List.of("run", "--upstream", upstream, "--listen-host", "0.0.0.0",
            "--listen-port", Integer.toString(listenPort), "--advertised-host", getHost()));
        command.addAll(extraArgs);
        withCommand(command.toArray(new String[0]));
    }

    /** Bootstrap servers for clients on the host: kshim, which advertises its own address for every broker. */
    public String getBootstrapServers() {
        return getHost() + ":" + listenPort;
    }

    public int getListenPort() {
        return listenPort;
    }

    /** kshim's port for broker node {@code id}: listen port + 1 + id. */
    public int nodePort(int id) {
        return listenPort + 1 + id;
    }

    /** The first port p (from 29650) where p .. p+count-1 are all free on this host. */
    private static int freePorts(int count) {
        for (int p = FIRST_PORT + (int) (ProcessHandle.current().pid() % 97) * 3; p + count <= LAST_PORT; p += count) {
            if (allFree(p, count)) {
                return p;
            }
        }
        throw new IllegalStateException("no " + count + " free consecutive ports between " + FIRST_PORT + " and " + LAST_PORT);
    }

    private static boolean allFree(int first, int count) {
        for (int p = first; p < first + count; p++) {
            try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getLoopbackAddress())) {
                s.setReuseAddress(true);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }
}
