// kshim compat: the Admin calls no Kafka CLI tool makes (our own code, compiled by scripts/setup or on
// first use into build/java). Prints one JSON object on stdout.
//   CompatAdmin remove-members BOOTSTRAP GROUP ID[,ID...]   removeMembersFromConsumerGroup (KIP-345 batch leave)
//   CompatAdmin describe BOOTSTRAP GROUP                    describeConsumerGroups: type, state, members
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.protocol.Errors;

public class CompatAdmin {
    static String errorName(Throwable t) {
        Throwable cause = (t instanceof ExecutionException && t.getCause() != null) ? t.getCause() : t;
        return Errors.forException(cause).name();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            if (args[0].equals("remove-members")) {
                List<MemberToRemove> members = new ArrayList<>();
                for (String id : args[3].split(",")) members.add(new MemberToRemove(id));
                RemoveMembersFromConsumerGroupResult r = admin.removeMembersFromConsumerGroup(
                    args[2], new RemoveMembersFromConsumerGroupOptions(members));
                StringBuilder out = new StringBuilder("{\"members\": {");
                for (int i = 0; i < members.size(); i++) {
                    String err = "NONE";
                    try { r.memberResult(members.get(i)).get(); } catch (Exception e) { err = errorName(e); }
                    out.append(i == 0 ? "" : ", ").append(quote(members.get(i).groupInstanceId())).append(": ").append(quote(err));
                }
                String all = "NONE";
                try { r.all().get(); } catch (Exception e) { all = errorName(e); }
                System.out.println(out.append("}, \"all\": ").append(quote(all)).append("}"));
            } else if (args[0].equals("describe")) {
                String out;
                try {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(args[2])).all().get().get(args[2]);
                    out = "{\"type\": " + quote(String.valueOf(d.type())) + ", \"state\": " + quote(String.valueOf(d.groupState()))
                        + ", \"members\": " + d.members().size() + ", \"error\": \"NONE\"}";
                } catch (Exception e) {
                    out = "{\"error\": " + quote(errorName(e)) + "}";
                }
                System.out.println(out);
            } else {
                throw new IllegalArgumentException("unknown command " + args[0]);
            }
        }
    }
}
