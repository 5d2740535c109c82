// bench-proxy's Kroxylicious: starts Kroxylicious's own KafkaProxy (kroxylicious-runtime, from Maven
// Central; the kroxylicious-app module with its main class is not published there) with no filters,
// a pure pass-through, and one gateway plugin of ours: the port-per-node layout of Kroxylicious's
// portIdentifiesNode gateway, bound to 127.0.0.1 only (0.12's gateway binds every interface).
// Usage: java -cp <classes>:<lib/*> KroxyliciousBench CONFIG.yaml
import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.internal.config.Features;
import io.kroxylicious.proxy.plugin.Plugin;
import io.kroxylicious.proxy.service.ClusterNetworkAddressConfigProvider;
import io.kroxylicious.proxy.service.ClusterNetworkAddressConfigProviderService;
import io.kroxylicious.proxy.service.HostPort;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

public final class KroxyliciousBench {
    public static void main(String[] args) throws Exception {
        ConfigParser parser = new ConfigParser();
        var config = parser.parseConfiguration(Files.readString(Path.of(args[0])));
        try (KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures())) {
            proxy.startup();
            System.out.println("kroxylicious started");
            System.out.flush();
            proxy.block();
        }
    }

    /** Config: the bootstrap port; node n is served on bootstrapPort + 1 + n, for n below nodes. */
    public record LoopbackConfig(int bootstrapPort, int nodes) {}

    @Plugin(configType = LoopbackConfig.class)
    public static final class LoopbackPortPerNode implements ClusterNetworkAddressConfigProviderService<LoopbackConfig> {
        @Override
        public ClusterNetworkAddressConfigProvider build(LoopbackConfig c) {
            return new Provider(c);
        }
    }

    static final class Provider implements ClusterNetworkAddressConfigProvider {
        private static final String HOST = "127.0.0.1";
        private final LoopbackConfig c;

        Provider(LoopbackConfig c) {
            this.c = c;
        }

        @Override
        public HostPort getClusterBootstrapAddress() {
            return new HostPort(HOST, c.bootstrapPort());
        }

        @Override
        public HostPort getBrokerAddress(int nodeId) {
            if (nodeId < 0 || nodeId >= c.nodes()) {
                throw new IllegalArgumentException("node " + nodeId + " is outside 0.." + (c.nodes() - 1));
            }
            return new HostPort(HOST, c.bootstrapPort() + 1 + nodeId);
        }

        @Override
        public Integer getBrokerIdFromBrokerAddress(HostPort address) {
            int node = address.port() - c.bootstrapPort() - 1;
            return node >= 0 && node < c.nodes() ? node : null;
        }

        @Override
        public Optional<String> getBindAddress() {
            return Optional.of(HOST);
        }

        @Override
        public Set<Integer> getExclusivePorts() {
            Set<Integer> ports = new HashSet<>();
            for (int p = c.bootstrapPort(); p <= c.bootstrapPort() + c.nodes(); p++) {
                ports.add(p);
            }
            return ports;
        }

        @Override
        public Map<Integer, HostPort> discoveryAddressMap() {
            Map<Integer, HostPort> map = new HashMap<>();
            for (int n = 0; n < c.nodes(); n++) {
                map.put(n, getBrokerAddress(n));
            }
            return map;
        }
    }
}
